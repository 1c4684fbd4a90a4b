#include "train/temporal_task.h"

#include "core/error.h"
#include "train/link_task.h"
#include "train/node_task.h"
#include "train/regression_task.h"

namespace halogen::train {

TaskKind parse_task_kind(const std::string& name) {
  if (name == "regression") return TaskKind::regression;
  if (name == "link") return TaskKind::link;
  if (name == "node") return TaskKind::node;
  throw UserError("unknown task '" + name + "' (expected regression, link or node)");
}

const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::regression: return "regression";
    case TaskKind::link: return "link";
    case TaskKind::node: return "node";
  }
  return "?";
}

std::unique_ptr<TemporalTask> make_temporal_task(comm::Communicator& comm, const graph::Shard& shard,
                                                 const TaskConfig& config, int64_t embedding_width) {
  HALOGEN_USER_CHECK(!shard.snapshots.empty(), "%s: not a dynamic graph (no snapshots); temporal models need one",
                     config.source.c_str());
  switch (config.kind) {
    case TaskKind::regression: return make_regression_task(comm, shard, config);
    case TaskKind::node: return make_node_task(comm, shard, config);
    case TaskKind::link:
      return make_link_task(comm, shard, config, embedding_width);
  }
  return nullptr;
}

}  // namespace halogen::train
