#include "train/link_task.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "comm/halo_exchange.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"

namespace halogen::train {
namespace {

// The pairs one step scores (the shard's link step, written by `halogen partition`: graph/shard.h,
// ShardLinkStep), the source row of every pair, and the exchange that fetches the non-owned endpoints' rows
// with the step's stored plan.
struct StepPairs {
  const graph::ShardLinkStep* step = nullptr;
  std::vector<int32_t> pair_source;        // (pairs) the source row of each pair
  std::unique_ptr<comm::HaloExchange> fetch;
  int64_t fetched = 0;
  double global_pairs = 0;
};

// The exchange that brings a link step's fetched rows (rows [n_own, n_own + plan.num_halo()) of the
// extended embedding matrix) from their owners, and sends their gradients back. The only place the link task
// builds a HaloExchange.
std::unique_ptr<comm::HaloExchange> make_link_fetch(comm::Communicator& comm, const graph::HaloPlan& plan,
                                                    int64_t num_owned, int64_t max_width) {
  return std::make_unique<comm::HaloExchange>(comm, plan, num_owned, max_width);
}

class LinkTask final : public TemporalTask {
 public:
  LinkTask(comm::Communicator& comm, const graph::Shard& shard, const TaskConfig& config, int64_t width)
      : comm_(comm), n_(shard.num_owned()), width_(width), seed_(config.seed), owned_gid_(shard.owned_gid) {
    train_ = check_temporal_task(shard, config);  // snapshots, link pairs, --negatives, --train-fraction
    steps_ = static_cast<int64_t>(shard.snapshots.size()) - 1;
    features_ = Tensor(n_, std::max<int64_t>(shard.num_features, 1), Device::cpu);
    if (shard.num_features > 0) std::copy(shard.features.begin(), shard.features.end(), features_.data());
    else std::fill(features_.data(), features_.data() + n_, 1.0f);

    link_steps_ = shard.link_steps;
    int64_t max_fetched = 0, max_pairs = 0;
    for (int64_t s = 0; s < steps_; ++s) {
      steps_pairs_.push_back(index_pairs(link_steps_[s]));
      max_fetched = std::max(max_fetched, steps_pairs_.back().fetched);
      max_pairs = std::max(max_pairs, link_steps_[s].num_pairs());
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
    const graph::ShardLinkStep& link = *p.step;
    Matrix<float> ext = gather(p, y);
    Matrix<float> grad_ext{grad_ext_.data(), n_ + p.fetched, width_, width_, Device::cpu};
    kernels::fill(Span<float>{grad_ext.data, grad_ext.rows * width_, Device::cpu}, 0.0f);
    const double inv = 1.0 / p.global_pairs;
    // scores = <ext[source], ext[target]>, the loss (softplus(score) - label * score) and d loss / d score, then
    // both endpoints' gradients (kernels/ops.h: pair_dot, bce_with_logits, pair_dot_backward).
    const int64_t pairs = link.num_pairs();
    const Span<const int32_t> source_rows{p.pair_source.data(), pairs, Device::cpu};
    const Span<const int32_t> target_rows{link.target.data(), pairs, Device::cpu};
    const Span<float> scores{scores_.data(), pairs, Device::cpu}, pair_grad{pair_grad_.data(), pairs, Device::cpu};
    kernels::pair_dot(ext, source_rows, target_rows, scores);
    const double sum = kernels::bce_with_logits(Span<const float>{scores.data, pairs, Device::cpu},
                                                Span<const uint8_t>{link.label.data(), pairs, Device::cpu},
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
    const graph::ShardLinkStep& link = *p.step;
    Matrix<float> ext = gather(p, y);
    const uint64_t random_stream = rng::stream_id(rng::kNegativeSampling, static_cast<uint32_t>(step), 1u << 31);
    const int64_t pairs = link.num_pairs();
    const Span<float> scores{scores_.data(), pairs, Device::cpu};
    kernels::pair_dot(ext, Span<const int32_t>{p.pair_source.data(), pairs, Device::cpu},
                      Span<const int32_t>{link.target.data(), pairs, Device::cpu}, scores);
    std::vector<std::pair<double, uint8_t>> model_scores, random_scores;
    for (size_t i = 0; i < link.sources.size(); ++i) {
      const int32_t u = link.sources[i];
      model_scores.clear();
      random_scores.clear();
      for (int64_t k = link.source_offsets[i]; k < link.source_offsets[i + 1]; ++k) {
        const int32_t row = link.target[k];
        model_scores.emplace_back(scores.data[k], link.label[k]);
        const int64_t target_gid = row < n_ ? owned_gid_[row] : link.fetched_gid[row - n_];
        const uint64_t index = static_cast<uint64_t>(owned_gid_[u]) * 0x100000000ull +
                               static_cast<uint64_t>(target_gid);
        random_scores.emplace_back(rng::uniform(seed_, random_stream, index), link.label[k]);
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
    bytes += static_cast<int64_t>(owned_gid_.size()) * 8;
    for (const StepPairs& p : steps_pairs_) {
      const graph::ShardLinkStep& link = *p.step;
      // per pair: target, label, pair_source; per source: id, offset; per fetched row: gid
      bytes += link.num_pairs() * (4 + 1 + 4) + static_cast<int64_t>(link.sources.size()) * (4 + 8) +
               link.num_fetched() * 8 +
               static_cast<int64_t>(link.plan.send_idx.size()) * 4 +
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

  // The step's pair sources and its exchange. Collective (the global pair count).
  StepPairs index_pairs(const graph::ShardLinkStep& link) {
    StepPairs p;
    p.step = &link;
    p.fetched = link.num_fetched();
    p.fetch = make_link_fetch(comm_, link.plan, n_, width_);
    const int64_t pairs = link.num_pairs();
    p.pair_source.resize(pairs);
    for (size_t i = 0; i < link.sources.size(); ++i) {
      for (int64_t k = link.source_offsets[i]; k < link.source_offsets[i + 1]; ++k)
        p.pair_source[k] = link.sources[i];
    }
    double global_pairs = static_cast<double>(pairs);  // exact: pair counts are far below 2^53
    comm_.allreduce_sum(&global_pairs, 1);
    p.global_pairs = std::max(global_pairs, 1.0);
    return p;
  }

  comm::Communicator& comm_;
  int64_t n_, width_;
  uint64_t seed_;                   // random baseline scores
  std::vector<int64_t> owned_gid_;  // (n) global ids of the owned rows (random baseline)
  int64_t steps_ = 0, train_ = 0;
  std::vector<graph::ShardLinkStep> link_steps_;  // the shard's, copied: the caller may free the shard
  Tensor features_, ext_, grad_ext_;
  Tensor pair_grad_, scores_;  // (max pairs of a step) d loss / d score, score
  std::vector<StepPairs> steps_pairs_;
  double sums_[5] = {0, 0, 0, 0, 0};  // AP, RR, random AP, random RR, sources
};

}  // namespace

std::unique_ptr<TemporalTask> make_link_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config, int64_t embedding_width) {
  return std::make_unique<LinkTask>(comm, shard, config, embedding_width);
}

}  // namespace halogen::train
