#pragma once
// Node regression on a snapshot sequence (definition in train/temporal_task.h).
#include "train/temporal_task.h"

namespace halogen::train {

std::unique_ptr<TemporalTask> make_regression_task(comm::Communicator& comm, const graph::Shard& shard,
                                                   const TaskConfig& config);

}  // namespace halogen::train
