#pragma once
// Loading a rank's training input from a partition directory, collectively: every rank reads meta.json and its
// own shard; if any rank fails (missing/corrupt file, number of ranks != number of parts), every rank throws
// (the failing rank its UserError, the others PeerFailed), so no rank is left waiting.
#include <string>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "io/part_file.h"

namespace halogen::train {

struct RankInput {
  io::PartitionMeta meta;
  graph::Shard shard;
};

// `row_normalize`: divide each feature row by its sum (Kipf & Welling's preprocessing).
RankInput load_rank_input(comm::Communicator& comm, const std::string& dir, bool row_normalize);

}  // namespace halogen::train
