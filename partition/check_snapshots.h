#pragma once
// The invariants of a dynamic graph's snapshot shards (graph/shard.h, ShardSnapshot), verified against the
// graph file, for `halogen info DIR --check` (partition/check.h calls it for every shard):
//   one snapshot per time step of the graph; at step t, the snapshot halo is exactly the remote neighbours of
//   the owned vertices in snapshot t (so a subset of the union halo), grouped by owner; the rows sent to part
//   r are exactly the owned vertices that r's snapshot halo holds, in r's order (ascending); the local CSR
//   equals the global snapshot rows (columns and weights); degrees are the snapshot's.
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"

namespace halogen::partition {

// Throws UserError "<file>: invariant violated: /snapshots/NNNNN/...: what" at the first violation.
void check_shard_snapshots(const graph::Shard& shard, const graph::Graph& graph,
                           const std::vector<int32_t>& assignment, const std::string& file);

}  // namespace halogen::partition
