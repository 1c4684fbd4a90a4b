#pragma once
// The invariants of a dynamic graph's snapshot shards (graph/shard.h, ShardSnapshot), verified against the
// graph file, for `halogen info DIR --check` (partition/check.h calls it for every shard):
//   one snapshot per time step of the graph; at step t, the snapshot halo is exactly the remote neighbours of
//   the owned vertices in snapshot t (so a subset of the union halo), grouped by owner; the rows sent to part
//   r are exactly the owned vertices that r's snapshot halo holds, in r's order (ascending); the local CSR
//   equals the global snapshot rows (columns and weights); degrees are the snapshot's.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"

namespace halogen::partition {

// Whether a shard's local row, given as (global column id, weight) pairs in any order (weight ignored when
// `global` is unweighted), equals row `u` of `global`. Sorts `row`. Shared by the static and snapshot checks.
bool local_row_equals_global(const graph::Csr& global, int64_t u, std::vector<std::pair<int64_t, float>>& row);

// Throws UserError "<file>: invariant violated: /snapshots/NNNNN/...: what" at the first violation.
void check_shard_snapshots(const graph::Shard& shard, const graph::Graph& graph,
                           const std::vector<int32_t>& assignment, const std::string& file);

}  // namespace halogen::partition
