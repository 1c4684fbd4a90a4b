// The global halo plan (one bitmap pass per part over the whole graph) and the whole-graph RowSource that
// build_shard (partition/shard_builder.h) makes a part's shard from.
#include "partition/halo_plan.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "partition/shard_builder.h"

namespace halogen::partition {

int64_t degree_without_self_loop(const graph::Csr& adjacency, int64_t v) {
  const auto begin = adjacency.indices.begin() + adjacency.indptr[v];
  const auto end = adjacency.indices.begin() + adjacency.indptr[v + 1];
  return (end - begin) - (std::binary_search(begin, end, v) ? 1 : 0);
}

HaloPlan build_halo_plan(const graph::Csr& adjacency, std::vector<int32_t> part_of, int32_t num_parts) {
  const int64_t n = adjacency.num_rows;
  HALOGEN_ASSERT(static_cast<int64_t>(part_of.size()) == n, "part_of has %zu entries for %lld rows",
                 part_of.size(), static_cast<long long>(n));
  HaloPlan plan;
  plan.num_parts = num_parts;
  plan.part_of = std::move(part_of);
  plan.local_of.resize(n);
  plan.owned_offsets.assign(num_parts + 1, 0);
  for (int64_t v = 0; v < n; ++v) {
    const int32_t p = plan.part_of[v];
    HALOGEN_ASSERT(p >= 0 && p < num_parts, "vertex %lld has part %d", static_cast<long long>(v), p);
    ++plan.owned_offsets[p + 1];
  }
  for (int32_t p = 0; p < num_parts; ++p) plan.owned_offsets[p + 1] += plan.owned_offsets[p];
  plan.owned_gid.resize(n);
  {
    std::vector<int64_t> fill(plan.owned_offsets.begin(), plan.owned_offsets.end() - 1);
    for (int64_t v = 0; v < n; ++v) {
      const int32_t p = plan.part_of[v];
      plan.local_of[v] = static_cast<int32_t>(fill[p] - plan.owned_offsets[p]);
      plan.owned_gid[fill[p]++] = v;
    }
  }
  for (int32_t p = 0; p < num_parts; ++p) {
    HALOGEN_USER_CHECK(
        plan.num_owned(p) <= std::numeric_limits<int32_t>::max(),
        "part %d owns %lld vertices, more than a shard's int32 local ids allow; use more parts", p,
        static_cast<long long>(plan.num_owned(p)));
  }

  plan.halo_gid.resize(num_parts);
  plan.recv_offsets.assign(num_parts, std::vector<int64_t>(num_parts + 1, 0));
#pragma omp parallel for schedule(dynamic, 1)
  for (int32_t p = 0; p < num_parts; ++p) {
    // A bitmap over all vertices marks remote columns; reading it in order yields them sorted and unique
    // without a sort (N/8 bytes per part in flight).
    std::vector<uint64_t> marked(static_cast<size_t>((n + 63) / 64), 0);
    int64_t marked_count = 0;
    for (int64_t i = plan.owned_offsets[p]; i < plan.owned_offsets[p + 1]; ++i) {
      const int64_t u = plan.owned_gid[i];
      for (int64_t e = adjacency.indptr[u]; e < adjacency.indptr[u + 1]; ++e) {
        const int64_t v = adjacency.indices[e];
        if (plan.part_of[v] == p) continue;
        uint64_t& word = marked[v >> 6];
        const uint64_t bit = uint64_t{1} << (v & 63);
        marked_count += (word & bit) == 0;
        word |= bit;
      }
    }
    std::vector<int64_t> remote;
    remote.reserve(marked_count);
    for (size_t w = 0; w < marked.size(); ++w)
      for (uint64_t word = marked[w]; word != 0; word &= word - 1)
        remote.push_back(static_cast<int64_t>(w * 64 + __builtin_ctzll(word)));
    marked = {};
    // Stable bucket by owner: ascending gid within each owner group.
    std::vector<int64_t>& offsets = plan.recv_offsets[p];
    for (int64_t v : remote) ++offsets[plan.part_of[v] + 1];
    for (int32_t q = 0; q < num_parts; ++q) offsets[q + 1] += offsets[q];
    std::vector<int64_t> halo(remote.size());
    std::vector<int64_t> fill(offsets.begin(), offsets.end() - 1);
    for (int64_t v : remote) halo[fill[plan.part_of[v]]++] = v;
    plan.halo_gid[p] = std::move(halo);
  }
  for (int32_t p = 0; p < num_parts; ++p) {
    HALOGEN_USER_CHECK(
        plan.num_owned(p) + plan.num_halo(p) <= std::numeric_limits<int32_t>::max(),
        "part %d has %lld owned + %lld halo rows, more than a shard's int32 local ids allow; use "
        "more parts",
        p, static_cast<long long>(plan.num_owned(p)), static_cast<long long>(plan.num_halo(p)));
  }
  return plan;
}

namespace {

// A part's rows in the whole graph, with the global plan (METIS, random, contiguous). Directed graphs too:
// what this part sends comes from the other parts' halos, not from its own rows.
class WholeGraphRows final : public RowSource {
 public:
  WholeGraphRows(const graph::Graph& graph, const HaloPlan& plan, int32_t part)
      : graph_(graph),
        adj_(graph.adjacency),
        plan_(plan),
        part_(part),
        owned_(plan.owned_gid.data() + plan.owned_offsets[part]) {}

  void header(graph::Shard& s) const override {
    s.part = part_;
    s.num_parts = plan_.num_parts;
    s.global_num_nodes = graph_.num_nodes;
    s.global_num_edges = graph_.num_edges();
    s.num_classes = graph_.num_classes;
    s.num_features = graph_.num_features;
    s.graph_name = graph_.name;
  }
  bool weighted() const override { return adj_.weighted(); }
  int64_t num_owned() const override { return plan_.num_owned(part_); }
  int64_t owned_gid(int64_t i) const override { return owned_[i]; }
  int64_t row_length(int64_t i) const override { return adj_.degree(owned_[i]); }
  void row(int64_t i, std::vector<RowEntry>& entries) const override {
    entries.clear();
    const int64_t u = owned_[i];
    for (int64_t e = adj_.indptr[u]; e < adj_.indptr[u + 1]; ++e) {
      const int64_t v = adj_.indices[e];
      entries.push_back({v, plan_.part_of[v], adj_.weighted() ? adj_.weight[e] : 0.0f});
    }
  }
  int64_t owned_degree(int64_t i) const override { return degree_without_self_loop(adj_, owned_[i]); }

  void halo(graph::Shard& s) const override {
    s.halo_gid = plan_.halo_gid[part_];
    s.plan.recv_offsets = plan_.recv_offsets[part_];
    const int64_t n_halo = s.num_halo();
    s.degree_halo.resize(n_halo);
#pragma omp parallel for schedule(static)
    for (int64_t h = 0; h < n_halo; ++h) s.degree_halo[h] = degree_without_self_loop(adj_, s.halo_gid[h]);
  }

  // q's halo group from this part, in q's order, as local owned ids.
  void sends(graph::Shard& s) const override {
    const int32_t parts = plan_.num_parts;
    s.plan.send_offsets.assign(parts + 1, 0);
    for (int32_t q = 0; q < parts; ++q)
      s.plan.send_offsets[q + 1] = s.plan.send_offsets[q] + (q == part_ ? 0 : plan_.rows_sent(part_, q));
    s.plan.send_idx.resize(s.plan.send_offsets[parts]);
    for (int32_t q = 0; q < parts; ++q) {
      if (q == part_) continue;
      const std::vector<int64_t>& halo = plan_.halo_gid[q];
      int64_t at = s.plan.send_offsets[q];
      for (int64_t i = plan_.recv_offsets[q][part_]; i < plan_.recv_offsets[q][part_ + 1]; ++i)
        s.plan.send_idx[at++] = plan_.local_of[halo[i]];
    }
  }

  void node_data(graph::Shard& s) const override {
    const int64_t n_own = s.num_owned(), f = graph_.num_features;
    if (f > 0 && !graph_.features.empty()) {  // a graph read without its features: the caller fills them
      s.features.resize(static_cast<size_t>(n_own) * f);
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n_own; ++i)
        std::copy_n(graph_.features.begin() + s.owned_gid[i] * f, f, s.features.begin() + i * f);
    }
    if (!graph_.labels.empty()) {
      s.labels.resize(n_own);
      for (int64_t i = 0; i < n_own; ++i) s.labels[i] = graph_.labels[s.owned_gid[i]];
    }
    if (!graph_.targets.empty()) {
      const int64_t steps = std::max<int64_t>(graph_.target_steps, 1);
      s.target_steps = graph_.target_steps;
      s.targets.resize(static_cast<size_t>(steps) * n_own);
      for (int64_t t = 0; t < steps; ++t)
        for (int64_t i = 0; i < n_own; ++i)
          s.targets[t * n_own + i] = graph_.targets[t * graph_.num_nodes + s.owned_gid[i]];
      s.target_preprocess = graph_.preprocess.name;
      if (!graph_.preprocess.scale
               .empty()) {  // a per-node standardisation: the way back to the source's units
        s.target_offset.resize(n_own);
        s.target_scale.resize(n_own);
        for (int64_t i = 0; i < n_own; ++i) {
          s.target_offset[i] = graph_.preprocess.offset[s.owned_gid[i]];
          s.target_scale[i] = graph_.preprocess.scale[s.owned_gid[i]];
        }
      }
    }
  }

  const std::vector<int64_t>& split(int which) const override {
    return which == 0 ? graph_.train : which == 1 ? graph_.valid : graph_.test;
  }
  bool dense_ids() const override {
    return true;
  }

 private:
  const graph::Graph& graph_;
  const graph::Csr& adj_;
  const HaloPlan& plan_;
  int32_t part_;
  const int64_t* owned_;  // (n_own) this part's slice of plan.owned_gid
};

}  // namespace

graph::Shard build_shard(const graph::Graph& graph, const HaloPlan& plan, int32_t part) {
  return build_shard(WholeGraphRows(graph, plan, part));
}

void SendMarks::fill_send(graph::HaloPlan& plan) const {
  const int32_t parts = static_cast<int32_t>(marked_.size());
  plan.send_idx.clear();
  plan.send_offsets.assign(static_cast<size_t>(parts) + 1, 0);
  for (int32_t q = 0; q < parts; ++q) {
    const std::vector<uint8_t>& flags = marked_[static_cast<size_t>(q)];
    if (!flags.empty())
      for (int64_t i = 0; i < num_owned_; ++i)
        if (flags[static_cast<size_t>(i)]) plan.send_idx.push_back(static_cast<int32_t>(i));
    plan.send_offsets[static_cast<size_t>(q) + 1] = static_cast<int64_t>(plan.send_idx.size());
  }
}

}  // namespace halogen::partition
