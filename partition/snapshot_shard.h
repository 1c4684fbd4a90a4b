#pragma once
// Per-snapshot shards of a dynamic graph (DESIGN.md, "Dynamic graphs"): ownership is the union graph's
// partition, fixed over time; each snapshot gets its own local CSR and halo/send plan, a subset of the union
// halo (layout in graph/shard.h, ShardSnapshot).
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"
#include "partition/halo_plan.h"

namespace halogen::partition {

// Snapshot `snapshot` (N x N, its edges a subset of the union graph that `plan` was built from) restricted
// to `shard` (built by build_shard from the same plan). The send plan needs the rows of other parts that
// point into this part, so every row of the snapshot is scanned once: O(N + nnz_t) per part and snapshot.
// UserError when the snapshot reads a remote vertex outside the union halo (it is not a subset of the union).
graph::ShardSnapshot build_shard_snapshot(const graph::Csr& snapshot, const HaloPlan& plan,
                                          const graph::Shard& shard);

// All snapshots of `graph` for `shard`, in time order.
std::vector<graph::ShardSnapshot> build_shard_snapshots(const graph::Graph& graph, const HaloPlan& plan,
                                                        const graph::Shard& shard);

}  // namespace halogen::partition
