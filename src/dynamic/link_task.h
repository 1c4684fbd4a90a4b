#pragma once
// Link prediction on a snapshot sequence (definition in dynamic/temporal_task.h).
#include "dynamic/temporal_task.h"

namespace halogen::dynamic {

std::unique_ptr<TemporalTask> make_link_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config, const std::vector<int32_t>& part_of,
                                             int64_t embedding_width);

}  // namespace halogen::dynamic
