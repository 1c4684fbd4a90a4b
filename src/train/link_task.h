#pragma once
// Link prediction on a snapshot sequence (definition in train/temporal_task.h).
#include "train/temporal_task.h"

namespace halogen::train {

std::unique_ptr<TemporalTask> make_link_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config, int64_t embedding_width);

}  // namespace halogen::train
