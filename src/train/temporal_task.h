#pragma once
// TemporalTask: what is learned from a snapshot sequence on one rank of P: the input of each model step, the
// loss of a step's output (with its gradient) and the metrics. The model's steps are numbered 0..num_steps()-1;
// step s reads snapshot snapshot_of(s).
//
//   regression  node series y (T, N) (the graph file's /node/label float [T, N]); step s predicts y_t,
//               t = s + lags, from x = [y_{t-lags} .. y_{t-1}] (oldest first) on snapshot t-1 (the last
//               observed graph). Steps [0, train_steps) train; the rest are the test weeks. Loss: mean squared
//               error over all N vertices, averaged over the window's steps. Baselines on the test steps:
//               last observed value (y_{t-1}) and the per-vertex mean of the training targets. The model
//               learns the series standardised per vertex (TargetScaling); test_mse and the baselines are in
//               the file's units. When the file records the converter's transform of the series (convert
//               --preprocess: a per-node standardisation, whose offset/scale the shards carry, or log1p), the
//               same figures in the source's units follow as test_mse_original, baseline_last_mse_original and
//               baseline_mean_mse_original: errors times scale_v, or of expm1(prediction) and expm1(y_t); the
//               baselines' forecasts are mapped back likewise (the training mean as expm1 of the stored mean).
//               Not reported without a transform ("none": the file's units are the source's) or when the
//               partition predates the shards' offset/scale (a note says so).
//   link        embeddings y_s = model output on snapshot s score the pairs of snapshot s+1: every stored edge
//               (u, v) of G_{s+1} with u owned (positive) and `negatives` pairs (u, w) per positive, w drawn
//               uniformly (Philox, keyed by the partition's seed, independent of P) among the vertices that are
//               not u's neighbours in G_{s+1}. The pairs and the plans that fetch the rows of non-owned v, w
//               from their owners are written by `halogen partition` (partition/link_steps.h; the shard's
//               link_steps): nothing is planned at run time. Score <y_u, y_v>; loss: binary cross-entropy with
//               logits, mean over all pairs. Metrics on the test steps: MAP and MRR over sources u
//               (candidates: u's positives and negatives), and the same with random scores (random_map,
//               random_mrr).
//   node        static features every step; labels = /node/label int (classes at the last step); loss: softmax
//               cross-entropy over the training vertices at every step, averaged over the window's steps; metrics
//               (accuracy, macro F1) from the last step's output.
// Every call that moves rows is collective.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/buffer.h"
#include "graph/shard.h"
#include "train/workload.h"

namespace halogen::train {

enum class TaskKind { regression, link, node };
TaskKind parse_task_kind(const std::string& name);  // "regression" | "link" | "node"; UserError otherwise
const char* task_kind_name(TaskKind kind);

// How the regression task scales the series before the model sees it (--target-scaling).
//   per_node  z = (y - mean_v) / std_v per vertex, by the values the training steps see (inputs and targets of
//             steps [0, train_steps): t < lags + train_steps); std_v below 1e-7 of the level counts as 1. The
//             model learns z; test_mse and the baselines are in the file's units.
//   none      the values as stored.
enum class TargetScaling { per_node, none };
TargetScaling parse_target_scaling(const std::string& name);  // "per-node" | "none"; UserError otherwise
const char* target_scaling_name(TargetScaling scaling);

struct TaskConfig {
  TaskKind kind = TaskKind::regression;
  int64_t lags = 4;              // regression: past values per input row
  double train_fraction = 0.9;   // regression, link: the first fraction of the steps trains (floor, >= 1 step)
  TargetScaling scaling = TargetScaling::per_node;  // regression
  int64_t negatives = 0;         // link: negatives per positive the shards must have; 0: whatever they have
  uint64_t seed = 0;             // link: random-baseline scores (negatives are drawn by `halogen partition`)
  std::string source;            // the partition directory, for error messages
};


class TemporalTask {
 public:
  virtual ~TemporalTask() = default;
  virtual TaskKind kind() const = 0;
  virtual int64_t input_width() const = 0;
  virtual int64_t num_steps() const = 0;
  virtual int64_t train_steps() const = 0;   // regression/link: the first train_steps() steps; node: all
  virtual int64_t snapshot_of(int64_t step) const = 0;
  virtual Matrix<const float> input(int64_t step) = 0;  // (n_own, input_width)
  // Loss terms of step `step` for output y (n_own, out): returns this rank's share of the step's mean loss
  // (sum over ranks = the global mean) and writes grad_y "=" scale * d(step mean loss)/dy.
  virtual double loss(int64_t step, Matrix<const float> y, float scale, Matrix<float> grad_y) = 0;
  // Evaluation: called for every step after reset (node) or for every test step in order (regression,
  // link), with the model's output; then metrics() (collective) returns the global figures and clears.
  virtual void observe(int64_t step, Matrix<const float> y) = 0;
  virtual Metrics metrics() = 0;
  // Figures that do not depend on the model (regression baselines), collective; empty by default.
  virtual Metrics baselines() { return {}; }
  // Host bytes the task holds (inputs, plans, pair lists).
  virtual int64_t bytes() const = 0;
};

// Builds the task from the rank's shard (the link task's pairs and fetch plans are in the shard, written by
// `halogen partition`). Checks the shard has what the task needs (UserError naming `config.source`). Collective.
// The checks of the shard against the task that need no communication and that every rank meets alike (the
// snapshots, series, link pairs, labels and --lags/--train-fraction/--negatives): the number of training steps,
// or a UserError naming `config.source`. make_temporal_task runs it first; train runs it in run_collectively
// before the workload is built, so that an error is one line from one rank.
int64_t check_temporal_task(const graph::Shard& shard, const TaskConfig& config);

std::unique_ptr<TemporalTask> make_temporal_task(comm::Communicator& comm, const graph::Shard& shard,
                                                 const TaskConfig& config, int64_t embedding_width);

}  // namespace halogen::train
