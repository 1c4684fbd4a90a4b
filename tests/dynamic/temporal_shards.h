#pragma once
// Test support: a small temporal SBM and its shards for P parts (contiguous blocks of vertices, so that every
// part has a halo), built in memory without files. Header-only; include as "dynamic/temporal_shards.h".
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"
#include "io/temporal.h"
#include "partition/halo_plan.h"
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

// Shard `part` of `parts`: vertex v belongs to part v * parts / N.
inline graph::Shard temporal_shard(const graph::Graph& g, int32_t parts, int32_t part) {
  std::vector<int32_t> part_of(static_cast<size_t>(g.num_nodes));
  for (int64_t v = 0; v < g.num_nodes; ++v) part_of[v] = static_cast<int32_t>(v * parts / g.num_nodes);
  const partition::HaloPlan plan = partition::build_halo_plan(g.adjacency, part_of, parts);
  graph::Shard shard = partition::build_shard(g, plan, part);
  shard.snapshots = partition::build_shard_snapshots(g, plan, shard);
  return shard;
}

}  // namespace halogen::testing
