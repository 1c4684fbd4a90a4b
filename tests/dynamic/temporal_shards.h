#pragma once
// Test support: a small temporal SBM and its shards for P parts (contiguous blocks of vertices, so that every
// part has a halo), built in memory without files. Header-only; include as "dynamic/temporal_shards.h".
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"
#include "io/temporal.h"
#include "partition/halo_plan.h"
#include "partition/link_steps.h"
#include "partition/snapshot_shard.h"

namespace halogen::testing {

inline graph::Graph small_temporal_graph(int64_t nodes = 40, int64_t steps = 6, int64_t features = 3,
                                         uint64_t seed = 7) {
  io::TemporalSbmParams params;
  params.sbm.nodes = nodes;
  params.sbm.classes = 3;
  params.sbm.avg_degree = 4;
  params.sbm.features = features;
  params.sbm.seed = seed;
  params.steps = steps;
  params.churn = 0.3;
  params.drift = 0.05;
  return io::generate_temporal_sbm(params);
}

// Shard `part` of `parts` under the assignment part_of, with its snapshots and link steps built by the
// functions `halogen partition` calls (link negatives: `link_negatives` per positive, drawn with `link_seed`,
// the partition's --link-negatives and --seed; their defaults here are the command's).
inline graph::Shard temporal_shard(const graph::Graph& g, const std::vector<int32_t>& part_of, int32_t parts,
                                   int32_t part, int64_t link_negatives = 1, uint64_t link_seed = 1) {
  const partition::HaloPlan plan = partition::build_halo_plan(g.adjacency, part_of, parts);
  graph::Shard shard = partition::build_shard(g, plan, part);
  shard.snapshots = partition::build_shard_snapshots(g, plan, shard);
  if (g.snapshots.size() >= 2) {
    shard.link_negatives = link_negatives;
    shard.link_steps = partition::build_shard_link_steps(
        g, partition::sample_all_link_negatives(g, link_negatives, link_seed), plan, shard);
  }
  return shard;
}

// Contiguous blocks: vertex v belongs to part v * parts / N.
inline std::vector<int32_t> block_assignment(int64_t num_nodes, int32_t parts) {
  std::vector<int32_t> part_of(static_cast<size_t>(num_nodes));
  for (int64_t v = 0; v < num_nodes; ++v) part_of[v] = static_cast<int32_t>(v * parts / num_nodes);
  return part_of;
}

inline graph::Shard temporal_shard(const graph::Graph& g, int32_t parts, int32_t part) {
  return temporal_shard(g, block_assignment(g.num_nodes, parts), parts, part);
}

// A smooth random series per vertex, [T, N], as regression targets (so --task regression has something to fit).
inline void add_series(graph::Graph& g, uint64_t seed = 3) {
  const int64_t steps = static_cast<int64_t>(g.snapshots.size());
  g.targets.assign(static_cast<size_t>(steps * g.num_nodes), 0.0f);
  g.target_steps = steps;
  for (int64_t v = 0; v < g.num_nodes; ++v) {
    const double phase = 0.37 * static_cast<double>((v * 7919 + seed) % 17);
    for (int64_t t = 0; t < steps; ++t) {
      g.targets[t * g.num_nodes + v] = static_cast<float>(std::sin(0.6 * static_cast<double>(t) + phase) +
                                                          0.1 * static_cast<double>(v % 3));
    }
  }
}

}  // namespace halogen::testing
