#include "train/temporal_task.h"

#include <cmath>

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

TargetScaling parse_target_scaling(const std::string& name) {
  if (name == "per-node") return TargetScaling::per_node;
  if (name == "none") return TargetScaling::none;
  throw UserError("--target-scaling: unknown value '" + name + "' (expected per-node or none)");
}

const char* target_scaling_name(TargetScaling scaling) {
  return scaling == TargetScaling::per_node ? "per-node" : "none";
}

const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::regression: return "regression";
    case TaskKind::link: return "link";
    case TaskKind::node: return "node";
  }
  return "?";
}

int64_t check_temporal_task(const graph::Shard& shard, const TaskConfig& config) {
  const char* source = config.source.c_str();
  HALOGEN_USER_CHECK(!shard.snapshots.empty(), "%s: not a dynamic graph (no snapshots); temporal models need one",
                     source);
  const int64_t snapshots = static_cast<int64_t>(shard.snapshots.size());
  int64_t steps = snapshots;  // node: every snapshot trains (on the training vertices)
  if (config.kind == TaskKind::regression) {
    const int64_t periods = shard.target_steps;
    HALOGEN_USER_CHECK(!shard.targets.empty() && periods >= 1,
                       "%s: the graph has no regression series (/node/label float [T, N]) for --task regression",
                       source);
    HALOGEN_USER_CHECK(periods == snapshots, "%s: %lld target rows but %lld snapshots", source, (long long)periods,
                       (long long)snapshots);
    HALOGEN_USER_CHECK(config.lags >= 1 && config.lags < periods,
                       "%s: --lags %lld needs more than %lld time steps, the series has %lld", source,
                       (long long)config.lags, (long long)config.lags, (long long)periods);
    steps = periods - config.lags;
  } else if (config.kind == TaskKind::link) {
    HALOGEN_USER_CHECK(snapshots >= 3, "%s: --task link needs at least 3 snapshots (it predicts snapshot t+1 from "
                       "t and keeps the last ones for testing); the graph has %lld", source, (long long)snapshots);
    HALOGEN_USER_CHECK(shard.link_negatives >= 1,
                       "%s: the partition has no link-prediction pairs (it was made before `halogen partition` "
                       "wrote them); re-run `halogen partition` on the graph file to use --task link", source);
    HALOGEN_USER_CHECK(config.negatives == 0 || config.negatives == shard.link_negatives,
                       "%s: --negatives %lld, but the partition's link pairs have %lld negatives per positive; "
                       "re-partition with `halogen partition ... --link-negatives %lld`", source,
                       (long long)config.negatives, (long long)shard.link_negatives, (long long)config.negatives);
    HALOGEN_USER_CHECK(static_cast<int64_t>(shard.link_steps.size()) == snapshots - 1,
                       "%s: the shard has %zu link steps for %lld snapshots; re-run `halogen partition`", source,
                       shard.link_steps.size(), (long long)snapshots);
    steps = snapshots - 1;
  } else {
    HALOGEN_USER_CHECK(shard.num_classes >= 2 && static_cast<int64_t>(shard.labels.size()) == shard.num_owned(),
                       "%s: --task node needs integer class labels (/node/label int [N]); the graph has none", source);
    return steps;
  }
  const int64_t train = static_cast<int64_t>(std::floor(config.train_fraction * static_cast<double>(steps)));
  HALOGEN_USER_CHECK(train >= 1 && train < steps,
                     config.kind == TaskKind::regression
                         ? "%s: --train-fraction %g of %lld steps (T - lags) leaves no training or no test step"
                         : "%s: --train-fraction %g of %lld link steps (snapshots - 1) leaves no training or no test "
                           "step",
                     source, config.train_fraction, (long long)steps);
  return train;
}

std::unique_ptr<TemporalTask> make_temporal_task(comm::Communicator& comm, const graph::Shard& shard,
                                                 const TaskConfig& config, int64_t embedding_width) {
  check_temporal_task(shard, config);
  switch (config.kind) {
    case TaskKind::regression: return make_regression_task(comm, shard, config);
    case TaskKind::node: return make_node_task(comm, shard, config);
    case TaskKind::link:
      return make_link_task(comm, shard, config, embedding_width);
  }
  return nullptr;
}

}  // namespace halogen::train
