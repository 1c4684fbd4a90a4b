#pragma once
// The invariants of the link-prediction steps of a dynamic graph's shards (graph/shard.h, ShardLinkStep;
// partition/link_steps.h), verified against the graph file, for `halogen info DIR --check`
// (partition/check.cpp calls these for every shard, then across shards):
//   one step per pair of consecutive snapshots; at step s, the sources are exactly the owned u with a
//   neighbour v != u in G_{s+1}, ascending; a source's pairs are its neighbours in G_{s+1} (ascending, label
//   1) then at most link_negatives per positive sampled negatives (label 0), each neither u nor a neighbour;
//   the fetched rows are exactly the non-owned endpoints, each in the group of its owner (assignment.h5),
//   never this part; and (across shards) the rows part q sends to part r are r's fetched rows from q, in r's
//   order. Shards without link steps (link_negatives 0: partitions made before they were written) pass.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"

namespace halogen::partition {

// Throws UserError "<file>: invariant violated: /link/NNNNN: what" at the first violation.
void check_shard_link_steps(const graph::Shard& shard, const graph::Graph& graph,
                            const std::vector<int32_t>& assignment, const std::string& file);

// What the cross-shard check needs of one part: its owned gids and every step's fetched gids and plan.
struct LinkFetchPlans {
  std::vector<int64_t> owned_gid;
  std::vector<std::vector<int64_t>> fetched_gid;  // [step]
  std::vector<graph::HaloPlan> plan;              // [step]
};
LinkFetchPlans keep_link_fetch_plans(const graph::Shard& shard);

// parts[p] from part p's shard, files[p] its file name. Throws naming the sender's file.
void check_link_sends(const std::vector<LinkFetchPlans>& parts, const std::vector<std::string>& files);

}  // namespace halogen::partition
