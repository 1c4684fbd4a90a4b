#pragma once
// Node classification on a snapshot sequence (definition in dynamic/temporal_task.h).
#include "dynamic/temporal_task.h"

namespace halogen::dynamic {

std::unique_ptr<TemporalTask> make_node_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config);

}  // namespace halogen::dynamic
