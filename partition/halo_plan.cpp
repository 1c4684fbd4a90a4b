#include "partition/halo_plan.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

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

// Local ids (into [0, n_own)) of the split members owned by `part`, ascending.
std::vector<int64_t> local_split(const std::vector<int64_t>& split, const HaloPlan& plan, int32_t part) {
  std::vector<int64_t> local;
  for (int64_t v : split)
    if (plan.part_of[v] == part) local.push_back(plan.local_of[v]);
  std::sort(local.begin(), local.end());
  return local;
}

}  // namespace

graph::Shard build_shard(const graph::Graph& graph, const HaloPlan& plan, int32_t part) {
  const graph::Csr& adj = graph.adjacency;
  const int32_t parts = plan.num_parts;
  graph::Shard s;
  s.part = part;
  s.num_parts = parts;
  s.global_num_nodes = graph.num_nodes;
  s.global_num_edges = graph.num_edges();
  s.num_classes = graph.num_classes;
  s.num_features = graph.num_features;
  s.graph_name = graph.name;

  s.owned_gid.assign(plan.owned_gid.begin() + plan.owned_offsets[part],
                     plan.owned_gid.begin() + plan.owned_offsets[part + 1]);
  s.halo_gid = plan.halo_gid[part];
  s.plan.recv_offsets = plan.recv_offsets[part];
  const int64_t n_own = s.num_owned(), n_halo = s.num_halo();

  // Send plan: q's halo group from this part, in q's order, as local owned ids.
  s.plan.send_offsets.assign(parts + 1, 0);
  for (int32_t q = 0; q < parts; ++q)
    s.plan.send_offsets[q + 1] = s.plan.send_offsets[q] + (q == part ? 0 : plan.rows_sent(part, q));
  s.plan.send_idx.resize(s.plan.send_offsets[parts]);
  for (int32_t q = 0; q < parts; ++q) {
    if (q == part) continue;
    const std::vector<int64_t>& halo = plan.halo_gid[q];
    int64_t at = s.plan.send_offsets[q];
    for (int64_t i = plan.recv_offsets[q][part]; i < plan.recv_offsets[q][part + 1]; ++i)
      s.plan.send_idx[at++] = plan.local_of[halo[i]];
  }

  // Local CSR: owned columns map through local_of, halo columns to n_own + their position in the halo.
  s.indptr.assign(n_own + 1, 0);
  for (int64_t i = 0; i < n_own; ++i) s.indptr[i + 1] = s.indptr[i] + adj.degree(s.owned_gid[i]);
  s.indices.resize(s.indptr[n_own]);
  const bool weighted = adj.weighted();
  if (weighted) s.weight.resize(s.indptr[n_own]);
  s.degree_owned.resize(n_own);
  // Local id of every halo vertex by global id (-1 elsewhere): O(1) column mapping, N int32 per build.
  std::vector<int32_t> halo_local(graph.num_nodes, -1);
  for (int64_t h = 0; h < n_halo; ++h) halo_local[s.halo_gid[h]] = static_cast<int32_t>(n_own + h);
#pragma omp parallel
  {
    std::vector<std::pair<int32_t, float>> row;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < n_own; ++i) {
      const int64_t u = s.owned_gid[i];
      row.clear();
      bool has_halo = false;
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e) {
        const int64_t v = adj.indices[e];
        const int32_t owner = plan.part_of[v];
        int64_t local;
        if (owner == part) {
          local = plan.local_of[v];
        } else {
          local = halo_local[v];
          has_halo = true;
        }
        row.emplace_back(static_cast<int32_t>(local), weighted ? adj.weight[e] : 0.0f);
      }
      // Owned columns come out ascending (local ids follow gids); halo columns may not.
      if (has_halo)
        std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      int64_t at = s.indptr[i];
      for (const auto& [column, weight] : row) {
        s.indices[at] = column;
        if (weighted) s.weight[at] = weight;
        ++at;
      }
      s.degree_owned[i] = degree_without_self_loop(adj, u);
    }
  }
  s.degree_halo.resize(n_halo);
#pragma omp parallel for schedule(static)
  for (int64_t h = 0; h < n_halo; ++h) s.degree_halo[h] = degree_without_self_loop(adj, s.halo_gid[h]);

  const int64_t f = graph.num_features;
  if (f > 0 && !graph.features.empty()) {  // a graph read without its features: the caller fills them
    s.features.resize(static_cast<size_t>(n_own) * f);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n_own; ++i)
      std::copy_n(graph.features.begin() + s.owned_gid[i] * f, f, s.features.begin() + i * f);
  }
  if (!graph.labels.empty()) {
    s.labels.resize(n_own);
    for (int64_t i = 0; i < n_own; ++i) s.labels[i] = graph.labels[s.owned_gid[i]];
  }
  if (!graph.targets.empty()) {
    const int64_t steps = std::max<int64_t>(graph.target_steps, 1);
    s.target_steps = graph.target_steps;
    s.targets.resize(static_cast<size_t>(steps) * n_own);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t i = 0; i < n_own; ++i)
        s.targets[t * n_own + i] = graph.targets[t * graph.num_nodes + s.owned_gid[i]];
    s.target_preprocess = graph.preprocess.name;
    if (!graph.preprocess.scale.empty()) {  // a per-node standardisation: the way back to the source's units
      s.target_offset.resize(n_own);
      s.target_scale.resize(n_own);
      for (int64_t i = 0; i < n_own; ++i) {
        s.target_offset[i] = graph.preprocess.offset[s.owned_gid[i]];
        s.target_scale[i] = graph.preprocess.scale[s.owned_gid[i]];
      }
    }
  }
  s.train = local_split(graph.train, plan, part);
  s.valid = local_split(graph.valid, plan, part);
  s.test = local_split(graph.test, plan, part);
  return s;
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
