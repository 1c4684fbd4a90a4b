#pragma once
// The invariants of a partition directory, verified against the graph it was made from:
//   1. the owned sets are disjoint, cover all N vertices and agree with assignment.h5;
//   2. each part's halo is exactly the set of remote neighbours of its owned vertices (columns of its owned
//      rows owned elsewhere), grouped by owner part;
//   3. the rows part q sends to r are r's halo rows from q, in r's order;
//   4. the local CSR equals the global rows (columns and weights) with ids mapped;
//   5. degrees, features, labels, targets and splits equal the global ones;
//   6. meta.json's sizes agree with the graph and the shards;
//   7. dynamic graphs: snapshot shards (partition/check_snapshots.h) and link steps (partition/check_link.h).
// Each shard is read (and self-validated) by io::read_shard; only halo and send lists are kept across parts.
#include <string>

#include "graph/graph.h"

namespace halogen::partition {

// Throws UserError naming the shard file (or meta.json / assignment.h5) and the first violated invariant.
void check_partition_dir(const std::string& dir, const graph::Graph& graph);

}  // namespace halogen::partition
