#include "train/link_task.h"

#include <algorithm>
#include <cmath>

#include "comm/halo_exchange.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"

namespace halogen::train {
namespace {

// The pairs one step scores, grouped by source (positives first, then negatives), and the plan that fetches
// the non-owned endpoints' rows from their owners.
struct StepPairs {
  std::vector<int64_t> source_offsets{0};  // pairs [off[i], off[i+1]) have source sources[i]
  std::vector<int32_t> sources;            // owned local ids
  std::vector<int64_t> source_gid;
  std::vector<int32_t> target;             // row of the other endpoint: < n owned, else n + fetched row
  std::vector<int64_t> target_gid;
  std::vector<uint8_t> label;              // 1 positive, 0 negative
  std::vector<int32_t> pair_source;        // (pairs) the source row of each pair
  std::vector<int64_t> by_target_offsets;  // (n + fetched + 1) pairs of target row r: by_target[off[r] ..)
  std::vector<int64_t> by_target;
  std::unique_ptr<comm::HaloExchange> fetch;
  int64_t fetched = 0;
  double global_pairs = 0;
};

class LinkTask final : public TemporalTask {
 public:
  LinkTask(comm::Communicator& comm, const graph::Shard& shard, const TaskConfig& config,
           const std::vector<int32_t>& part_of, int64_t width)
      : comm_(comm), n_(shard.num_owned()), width_(width), seed_(config.seed) {
    const int64_t snapshots = static_cast<int64_t>(shard.snapshots.size());
    HALOGEN_USER_CHECK(snapshots >= 3, "%s: --task link needs at least 3 snapshots (it predicts snapshot t+1 from "
                       "t and keeps the last ones for testing); the graph has %lld", config.source.c_str(),
                       (long long)snapshots);
    HALOGEN_USER_CHECK(config.negatives >= 1, "--negatives must be at least 1");
    HALOGEN_USER_CHECK(shard.global_num_nodes < (int64_t{1} << 31), "%s: --task link supports up to 2^31 vertices",
                       config.source.c_str());
    HALOGEN_USER_CHECK(static_cast<int64_t>(part_of.size()) == shard.global_num_nodes,
                       "%s: assignment has %zu entries for %lld vertices", config.source.c_str(), part_of.size(),
                       (long long)shard.global_num_nodes);
    steps_ = snapshots - 1;
    train_ = static_cast<int64_t>(std::floor(config.train_fraction * static_cast<double>(steps_)));
    HALOGEN_USER_CHECK(train_ >= 1 && train_ < steps_,
                       "%s: --train-fraction %g of %lld link steps (snapshots - 1) leaves no training or no test step",
                       config.source.c_str(), config.train_fraction, (long long)steps_);
    features_ = Tensor(n_, std::max<int64_t>(shard.num_features, 1), Device::cpu);
    if (shard.num_features > 0) std::copy(shard.features.begin(), shard.features.end(), features_.data());
    else std::fill(features_.data(), features_.data() + n_, 1.0f);

    int64_t max_fetched = 0, max_pairs = 0;
    for (int64_t s = 0; s < steps_; ++s) {
      steps_pairs_.push_back(build_pairs(shard, s, config.negatives, part_of));
      max_fetched = std::max(max_fetched, steps_pairs_.back().fetched);
      max_pairs = std::max(max_pairs, static_cast<int64_t>(steps_pairs_.back().label.size()));
    }
    pair_grad_ = Tensor(max_pairs, 1, Device::cpu);
    scores_ = Tensor(max_pairs, 1, Device::cpu);
    ext_ = Tensor(n_ + max_fetched, width_, Device::cpu);
    grad_ext_ = Tensor(n_ + max_fetched, width_, Device::cpu);
  }

  TaskKind kind() const override { return TaskKind::link; }
  int64_t input_width() const override { return features_.matrix().cols; }
  int64_t num_steps() const override { return steps_; }
  int64_t train_steps() const override { return train_; }
  int64_t snapshot_of(int64_t step) const override { return step; }
  Matrix<const float> input(int64_t) override { return Matrix<const float>(features_.matrix()); }

  double loss(int64_t step, Matrix<const float> y, float scale, Matrix<float> grad_y) override {
    StepPairs& p = steps_pairs_[step];
    Matrix<float> ext = gather(p, y);
    Matrix<float> grad_ext{grad_ext_.data(), n_ + p.fetched, width_, width_, Device::cpu};
    kernels::fill(Span<float>{grad_ext.data, grad_ext.rows * width_, Device::cpu}, 0.0f);
    const double inv = 1.0 / p.global_pairs;
    // scores = <ext[source], ext[target]>, the loss (softplus(score) - label * score) and d loss / d score, then
    // both endpoints' gradients.
    const int64_t pairs = static_cast<int64_t>(p.target.size());
    const Span<const int32_t> source_rows{p.pair_source.data(), pairs, Device::cpu};
    const Span<const int32_t> target_rows{p.target.data(), pairs, Device::cpu};
    const Span<float> scores{scores_.data(), pairs, Device::cpu}, pair_grad{pair_grad_.data(), pairs, Device::cpu};
    kernels::pair_dot(ext, source_rows, target_rows, scores);
    const double sum = kernels::bce_with_logits(Span<const float>{scores.data, pairs, Device::cpu},
                                                Span<const uint8_t>{p.label.data(), pairs, Device::cpu},
                                                static_cast<float>(inv * scale), pair_grad);
    kernels::pair_dot_backward(ext, source_rows, target_rows, Span<const float>{pair_grad.data, pairs, Device::cpu},
                               grad_ext);
    kernels::scale_add(1.0f, grad_ext.slice_rows(0, n_), 0.0f, grad_y);
    p.fetch->start_reverse(Matrix<const float>(grad_ext.slice_rows(n_, n_ + p.fetched)), nullptr);
    p.fetch->finish_reverse(grad_y, nullptr);
    return sum * inv;
  }

  void observe(int64_t step, Matrix<const float> y) override {
    StepPairs& p = steps_pairs_[step];
    Matrix<float> ext = gather(p, y);
    const uint64_t random_stream = rng::stream_id(rng::kNegativeSampling, static_cast<uint32_t>(step), 1u << 31);
    const int64_t pairs = static_cast<int64_t>(p.target.size());
    const Span<float> scores{scores_.data(), pairs, Device::cpu};
    kernels::pair_dot(ext, Span<const int32_t>{p.pair_source.data(), pairs, Device::cpu},
                      Span<const int32_t>{p.target.data(), pairs, Device::cpu}, scores);
    std::vector<std::pair<double, uint8_t>> model_scores, random_scores;
    for (size_t i = 0; i + 1 < p.source_offsets.size(); ++i) {
      model_scores.clear();
      random_scores.clear();
      for (int64_t k = p.source_offsets[i]; k < p.source_offsets[i + 1]; ++k) {
        model_scores.emplace_back(scores[k], p.label[k]);
        const uint64_t index = static_cast<uint64_t>(p.source_gid[i]) * 0x100000000ull +
                               static_cast<uint64_t>(p.target_gid[k]);
        random_scores.emplace_back(rng::uniform(seed_, random_stream, index), p.label[k]);
      }
      add_ranking(model_scores, sums_);
      add_ranking(random_scores, sums_ + 2);
      sums_[4] += 1;
    }
  }

  Metrics metrics() override {
    comm_.allreduce_sum(sums_, 5);
    const double sources = std::max(sums_[4], 1.0);
    Metrics m{{"test_map", sums_[0] / sources}, {"test_mrr", sums_[1] / sources},
              {"random_map", sums_[2] / sources}, {"random_mrr", sums_[3] / sources}};
    std::fill(sums_, sums_ + 5, 0.0);
    return m;
  }

  int64_t bytes() const override {
    int64_t bytes = (features_.size() + ext_.size() + grad_ext_.size() + pair_grad_.size() + scores_.size()) *
                    static_cast<int64_t>(sizeof(float));
    for (const StepPairs& p : steps_pairs_) {
      bytes += static_cast<int64_t>(p.target.size()) * (4 + 8 + 1 + 4 + 8) +
               static_cast<int64_t>(p.by_target_offsets.size()) * 8 +
               static_cast<int64_t>(p.sources.size()) * (4 + 8 + 8) +
               comm::HaloExchange::buffer_bytes(p.fetch->num_send(), width_);
    }
    return bytes;
  }

 private:
  // Sorted by score, descending; ties rank positives last (pessimistic). Adds AP and RR of one source.
  static void add_ranking(std::vector<std::pair<double, uint8_t>>& scores, double* sums) {
    std::sort(scores.begin(), scores.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    double hits = 0, precision_sum = 0, reciprocal = 0;
    for (size_t i = 0; i < scores.size(); ++i) {
      if (!scores[i].second) continue;
      hits += 1;
      precision_sum += hits / static_cast<double>(i + 1);
      if (hits == 1) reciprocal = 1.0 / static_cast<double>(i + 1);
    }
    sums[0] += hits > 0 ? precision_sum / hits : 0.0;
    sums[1] += reciprocal;
  }

  // ext (n + fetched, width): y's rows, then the fetched rows of this step.
  Matrix<float> gather(StepPairs& p, Matrix<const float> y) {
    HALOGEN_ASSERT(y.rows == n_ && y.cols == width_);
    Matrix<float> ext{ext_.data(), n_ + p.fetched, width_, width_, Device::cpu};
    kernels::scale_add(1.0f, y, 0.0f, ext.slice_rows(0, n_));
    p.fetch->start_forward(ext, nullptr);
    p.fetch->finish_forward(nullptr);
    return ext;
  }

  StepPairs build_pairs(const graph::Shard& shard, int64_t step, int64_t negatives,
                        const std::vector<int32_t>& part_of) {
    const graph::ShardSnapshot& next = shard.snapshots[step + 1];
    const int64_t num_nodes = shard.global_num_nodes;
    const int size = comm_.size(), rank = comm_.rank();
    StepPairs p;
    std::vector<int64_t> neighbours;
    std::vector<int64_t> remote;  // gids of non-owned endpoints (with repeats)
    for (int64_t u = 0; u < n_; ++u) {
      neighbours.clear();
      for (int64_t k = next.indptr[u]; k < next.indptr[u + 1]; ++k) {
        const int64_t c = next.indices[k];
        const int64_t gid = c < n_ ? shard.owned_gid[c] : shard.halo_gid[next.halo_rows[c - n_]];
        if (gid != shard.owned_gid[u]) neighbours.push_back(gid);
      }
      if (neighbours.empty()) continue;
      std::sort(neighbours.begin(), neighbours.end());
      const int64_t u_gid = shard.owned_gid[u];
      p.sources.push_back(static_cast<int32_t>(u));
      p.source_gid.push_back(u_gid);
      for (int64_t v : neighbours) {
        p.target_gid.push_back(v);
        p.label.push_back(1);
      }
      const uint64_t stream = rng::stream_id(rng::kNegativeSampling, static_cast<uint32_t>(step),
                                             static_cast<uint32_t>(u_gid), static_cast<uint32_t>(u_gid >> 32));
      const int64_t wanted = negatives * static_cast<int64_t>(neighbours.size());
      uint64_t draw = 0;
      for (int64_t j = 0; j < wanted; ++j) {
        for (int attempt = 0; attempt < 32; ++attempt) {
          const rng::Philox4 r = rng::bits(seed_, stream, draw);
          const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
          ++draw;
          const int64_t w = static_cast<int64_t>(bits % static_cast<uint64_t>(num_nodes));
          if (w == u_gid || std::binary_search(neighbours.begin(), neighbours.end(), w)) continue;
          p.target_gid.push_back(w);
          p.label.push_back(0);
          break;
        }
      }
      p.source_offsets.push_back(static_cast<int64_t>(p.label.size()));
    }
    // Rows: owned endpoints by local id; the others fetched, grouped by owner, sorted by gid within.
    for (int64_t gid : p.target_gid) {
      if (part_of[gid] != rank) remote.push_back(gid);
    }
    std::sort(remote.begin(), remote.end(), [&](int64_t a, int64_t b) {
      return part_of[a] != part_of[b] ? part_of[a] < part_of[b] : a < b;
    });
    remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
    p.fetched = static_cast<int64_t>(remote.size());
    graph::Shard plan;
    plan.owned_gid.assign(static_cast<size_t>(n_), 0);
    plan.halo_gid = remote;
    plan.recv_offsets.assign(size + 1, 0);
    for (int64_t gid : remote) plan.recv_offsets[part_of[gid] + 1] += 1;
    for (int q = 0; q < size; ++q) plan.recv_offsets[q + 1] += plan.recv_offsets[q];
    p.target.reserve(p.target_gid.size());
    for (int64_t gid : p.target_gid) {
      if (part_of[gid] == rank) {
        const auto it = std::lower_bound(shard.owned_gid.begin(), shard.owned_gid.end(), gid);
        HALOGEN_ASSERT(it != shard.owned_gid.end() && *it == gid, "vertex %lld is not owned here", (long long)gid);
        p.target.push_back(static_cast<int32_t>(it - shard.owned_gid.begin()));
      } else {
        const auto it = std::lower_bound(remote.begin(), remote.end(), gid, [&](int64_t a, int64_t b) {
          return part_of[a] != part_of[b] ? part_of[a] < part_of[b] : a < b;
        });
        p.target.push_back(static_cast<int32_t>(n_ + (it - remote.begin())));
      }
    }
    // Tell every owner which of its rows we want: counts first (P x P, summed), then the gids.
    std::vector<int64_t> counts(static_cast<size_t>(size) * size, 0);
    for (int q = 0; q < size; ++q) counts[rank * size + q] = plan.recv_offsets[q + 1] - plan.recv_offsets[q];
    comm_.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
    plan.send_offsets.assign(size + 1, 0);
    for (int r = 0; r < size; ++r) plan.send_offsets[r + 1] = plan.send_offsets[r] + counts[r * size + rank];
    std::vector<int32_t> requested_out(remote.size()), requested_in(static_cast<size_t>(plan.send_offsets[size]));
    for (size_t i = 0; i < remote.size(); ++i) requested_out[i] = static_cast<int32_t>(remote[i]);
    std::vector<comm::Message> sends, receives;
    for (int q = 0; q < size; ++q) {
      const int64_t r0 = plan.recv_offsets[q], r1 = plan.recv_offsets[q + 1];
      if (r1 > r0) sends.push_back({q, reinterpret_cast<float*>(requested_out.data() + r0), r1 - r0});
      const int64_t s0 = plan.send_offsets[q], s1 = plan.send_offsets[q + 1];
      if (s1 > s0) receives.push_back({q, reinterpret_cast<float*>(requested_in.data() + s0), s1 - s0});
    }
    comm_.wait(comm_.start_exchange(sends, receives, nullptr), nullptr);
    plan.send_idx.reserve(requested_in.size());
    for (int32_t gid : requested_in) {
      const auto it = std::lower_bound(shard.owned_gid.begin(), shard.owned_gid.end(), static_cast<int64_t>(gid));
      HALOGEN_ASSERT(it != shard.owned_gid.end() && *it == gid, "asked for vertex %d, not owned here", gid);
      plan.send_idx.push_back(static_cast<int32_t>(it - shard.owned_gid.begin()));
    }
    p.fetch = std::make_unique<comm::HaloExchange>(comm_, plan, width_);
    // Pairs grouped by target row (counting sort, pair order kept), for the targets' gradient.
    const int64_t pairs = static_cast<int64_t>(p.target.size());
    p.pair_source.resize(pairs);
    for (size_t i = 0; i + 1 < p.source_offsets.size(); ++i) {
      for (int64_t k = p.source_offsets[i]; k < p.source_offsets[i + 1]; ++k) p.pair_source[k] = p.sources[i];
    }
    p.by_target_offsets.assign(static_cast<size_t>(n_ + p.fetched + 1), 0);
    for (int32_t row : p.target) p.by_target_offsets[row + 1] += 1;
    for (int64_t r = 0; r < n_ + p.fetched; ++r) p.by_target_offsets[r + 1] += p.by_target_offsets[r];
    p.by_target.resize(pairs);
    std::vector<int64_t> fill_at(p.by_target_offsets.begin(), p.by_target_offsets.end() - 1);
    for (int64_t k = 0; k < pairs; ++k) p.by_target[fill_at[p.target[k]]++] = k;
    double global_pairs = static_cast<double>(pairs);
    comm_.allreduce_sum(&global_pairs, 1);
    p.global_pairs = std::max(global_pairs, 1.0);
    return p;
  }

  comm::Communicator& comm_;
  int64_t n_, width_;
  uint64_t seed_;
  int64_t steps_ = 0, train_ = 0;
  Tensor features_, ext_, grad_ext_;
  Tensor pair_grad_;  // (max pairs of a step) d loss / d score
  Tensor scores_;     // (max pairs of a step) <y_u, y_v> of each pair
  std::vector<StepPairs> steps_pairs_;
  double sums_[5] = {0, 0, 0, 0, 0};  // AP, RR, random AP, random RR, sources
};

}  // namespace

std::unique_ptr<TemporalTask> make_link_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config, const std::vector<int32_t>& part_of,
                                             int64_t embedding_width) {
  return std::make_unique<LinkTask>(comm, shard, config, part_of, embedding_width);
}

}  // namespace halogen::train
