#pragma once
// Test fixtures for training: a small deterministic random graph with class-correlated features (no io/
// dependency), and the shard of any part under any assignment, built exactly as DESIGN.md lays shards out
// (owned gids ascending; halo grouped by owner part, ascending within a group; send rows in the receiver's
// halo order). Header-only, test code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "graph/graph.h"
#include "graph/shard.h"

namespace halogen::testing {

// n vertices, `classes` blocks, each vertex picks `picks` random partners (70% in its block), symmetrised,
// no self-loops; vertex `isolated` (if >= 0) gets no edges. Features: class signal + uniform noise.
// Split: every 5th vertex valid, every 5th+1 test, the rest train; vertex 3 is unlabelled (-1).
inline graph::Graph synthetic_graph(int64_t n, int32_t classes, int64_t features, int picks, uint64_t seed,
                                    int64_t isolated = -1) {
  graph::Graph g;
  g.name = "synthetic";
  g.num_nodes = n;
  g.num_classes = classes;
  g.num_features = features;
  std::vector<std::set<int64_t>> adjacency(n);
  const uint64_t stream = rng::stream_id(rng::kGraphGenerate, 99);
  for (int64_t v = 0; v < n; ++v) {
    if (v == isolated) continue;
    for (int k = 0; k < picks; ++k) {
      const uint64_t r = rng::uniform_u64(seed, stream, static_cast<uint64_t>(v * picks + k));
      int64_t u;
      if ((r & 1023) < 717) {  // same block: vertices with the same v % classes
        const int64_t block_size = (n - (v % classes) + classes - 1) / classes;
        u = (v % classes) + static_cast<int64_t>((r >> 10) % block_size) * classes;
      } else {
        u = static_cast<int64_t>((r >> 10) % static_cast<uint64_t>(n));
      }
      if (u == v || u == isolated) continue;
      adjacency[v].insert(u);
      adjacency[u].insert(v);
    }
  }
  g.adjacency.num_rows = g.adjacency.num_cols = n;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t u : adjacency[v]) g.adjacency.indices.push_back(u);
    g.adjacency.indptr.push_back(g.adjacency.nnz());
  }
  g.labels.resize(n);
  g.features.resize(n * features);
  const uint64_t feature_stream = rng::stream_id(rng::kFeatures, 99);
  for (int64_t v = 0; v < n; ++v) {
    const int32_t label = static_cast<int32_t>(v % classes);
    g.labels[v] = v == 3 ? -1 : label;
    for (int64_t c = 0; c < features; ++c) {
      const float noise = rng::uniform(seed, feature_stream, static_cast<uint64_t>(v * features + c)) - 0.5f;
      g.features[v * features + c] = noise + (c % classes == label ? 0.6f : 0.0f);
    }
    if (v % 5 == 0) g.valid.push_back(v);
    else if (v % 5 == 1) g.test.push_back(v);
    else g.train.push_back(v);
  }
  return g;
}

// Gives every edge {u, v} of `g` the symmetric weight 0.25 + (hash of the pair mod 8) / 4, in [0.25, 2].
inline void add_edge_weights(graph::Graph& g) {
  g.adjacency.weight.resize(g.adjacency.indices.size());
  for (int64_t v = 0; v < g.num_nodes; ++v)
    for (int64_t k = g.adjacency.indptr[v]; k < g.adjacency.indptr[v + 1]; ++k) {
      const uint64_t a = static_cast<uint64_t>(std::min<int64_t>(v, g.adjacency.indices[k]));
      const uint64_t b = static_cast<uint64_t>(std::max<int64_t>(v, g.adjacency.indices[k]));
      g.adjacency.weight[k] = 0.25f + static_cast<float>((a * 2654435761u + b * 40503u) % 8) / 4.0f;
    }
}

inline graph::Shard make_shard(const graph::Graph& g, const std::vector<int32_t>& part_of, int32_t num_parts,
                               int32_t part) {
  const int64_t n = g.num_nodes;
  graph::Shard s;
  s.part = part;
  s.num_parts = num_parts;
  s.global_num_nodes = n;
  s.global_num_edges = g.adjacency.nnz();
  s.num_classes = g.num_classes;
  s.num_features = g.num_features;
  s.graph_name = g.name;
  std::vector<int64_t> local_of(n, -1);
  for (int64_t v = 0; v < n; ++v)
    if (part_of[v] == part) {
      local_of[v] = s.num_owned();
      s.owned_gid.push_back(v);
    }
  const int64_t n_own = s.num_owned();
  // Halo of part p: neighbours of owned vertices owned elsewhere, grouped by owner, ascending.
  auto halo_of = [&](int32_t p) {
    std::vector<std::set<int64_t>> by_owner(num_parts);
    for (int64_t v = 0; v < n; ++v) {
      if (part_of[v] != p) continue;
      for (int64_t k = g.adjacency.indptr[v]; k < g.adjacency.indptr[v + 1]; ++k) {
        const int64_t u = g.adjacency.indices[k];
        if (part_of[u] != p) by_owner[part_of[u]].insert(u);
      }
    }
    return by_owner;
  };
  const std::vector<std::set<int64_t>> halo = halo_of(part);
  s.plan.recv_offsets.push_back(0);
  for (int32_t q = 0; q < num_parts; ++q) {
    for (int64_t u : halo[q]) {
      local_of[u] = n_own + s.num_halo();
      s.halo_gid.push_back(u);
    }
    s.plan.recv_offsets.push_back(s.num_halo());
  }
  s.plan.send_offsets.push_back(0);
  for (int32_t q = 0; q < num_parts; ++q) {
    if (q != part) {
      const std::vector<std::set<int64_t>> halo_q = halo_of(q);
      for (int64_t u : halo_q[part]) s.plan.send_idx.push_back(static_cast<int32_t>(local_of[u]));
    }
    s.plan.send_offsets.push_back(static_cast<int64_t>(s.plan.send_idx.size()));
  }
  for (int64_t v : s.owned_gid) {
    std::vector<std::pair<int32_t, float>> row;  // (local column, weight), sorted by column
    for (int64_t k = g.adjacency.indptr[v]; k < g.adjacency.indptr[v + 1]; ++k)
      row.emplace_back(static_cast<int32_t>(local_of[g.adjacency.indices[k]]),
                       g.adjacency.weighted() ? g.adjacency.weight[k] : 1.0f);
    std::sort(row.begin(), row.end());
    for (const auto& [column, weight] : row) {
      s.indices.push_back(column);
      if (g.adjacency.weighted()) s.weight.push_back(weight);
    }
    s.indptr.push_back(s.nnz());
    s.degree_owned.push_back(g.adjacency.degree(v));
    for (int64_t c = 0; c < g.num_features; ++c) s.features.push_back(g.features[v * g.num_features + c]);
    s.labels.push_back(g.labels[v]);
  }
  for (int64_t u : s.halo_gid) s.degree_halo.push_back(g.adjacency.degree(u));
  auto localise = [&](const std::vector<int64_t>& ids, std::vector<int64_t>& out) {
    for (int64_t v : ids)
      if (part_of[v] == part) out.push_back(local_of[v]);
    std::sort(out.begin(), out.end());
  };
  localise(g.train, s.train);
  localise(g.valid, s.valid);
  localise(g.test, s.test);
  return s;
}

inline graph::Shard whole_graph_shard(const graph::Graph& g) {
  return make_shard(g, std::vector<int32_t>(g.num_nodes, 0), 1, 0);
}

}  // namespace halogen::testing
