#pragma once
// TemporalTrainer: trains a TemporalModel on a TemporalTask, on one rank of P (every rank runs the same loop;
// all calls are collective). One epoch walks the training steps from the zero state in BPTT windows of
// `window` steps: forward through the window (state carried), the task's loss on every step, backward through
// time in reverse, ONE allreduce of the flat gradient buffer, Adam; the next window starts from the state the
// previous one reached (truncated: no gradient crosses the boundary). Evaluation (every eval_every epochs and
// after the last): from the zero state, forward over all steps with the current parameters; the task's
// metrics on its test steps (node: on the last step). Memory: every buffer is allocated by the constructor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "train/temporal_task.h"
#include "graph/shard.h"
#include "nn/adam.h"
#include "nn/gradient_reducer.h"
#include "nn/profile.h"

namespace halogen::train {

struct TemporalTrainConfig {
  nn::TemporalModelConfig model;  // kind, hidden, layers, cheb_k, seed (in, out, max_window are set here)
  TaskConfig task;
  int64_t embedding = 0;      // link: embedding width (0: = hidden)
  int64_t window = 0;         // BPTT window in steps; 0 = the whole training span
  int64_t epochs = 100;
  float lr = 0.01f;
  float weight_decay = 0.0f;  // L2 on every parameter
  int64_t eval_every = 10;
  bool overlap = true;
  std::string metrics_path;   // JSON lines (rank 0); empty = none
  bool print_epochs = true;
};

struct TemporalEpoch {
  int64_t epoch = 0;
  double loss = 0;            // mean over the training steps of the step loss
  bool evaluated = false;
  Metrics metrics;
  // Max over ranks, milliseconds, of the training pass (evaluation excluded) and its phases.
  double epoch_ms = 0, spmm_ms = 0, halo_ms = 0, halo_exposed_ms = 0, allreduce_ms = 0, eval_ms = 0;
};

struct TemporalResult {
  std::vector<TemporalEpoch> epochs;
  Metrics final_metrics;      // of the last evaluation
  Metrics baselines;          // regression: baseline_last_mse, baseline_mean_mse
  double mean_epoch_ms = 0;
  double snapshots_per_s = 0; // trained steps (forward + backward) per second, over all epochs
  double exposed_comm_share = 0;  // (halo exposed + allreduce) / epoch time
  int64_t allocated_bytes = 0;    // max over ranks of the peak Buffer bytes (process lifetime) after training
  int64_t bytes_before_training = 0;  // max over ranks of Buffer bytes in use before epoch 1
};

class TemporalTrainer {
 public:
  // `part_of`: the owner of every global vertex (assignment.h5); needed by --task link only.
  TemporalTrainer(comm::Communicator& comm, const graph::Shard& shard, const TemporalTrainConfig& config,
                  const std::vector<int32_t>* part_of);
  TemporalResult run();
  nn::TemporalModel& model() { return *model_; }
  TemporalTask& task() { return *task_; }
  const TemporalTrainConfig& config() const { return config_; }

 private:
  double train_epoch(TemporalEpoch& record);
  Metrics evaluate();

  comm::Communicator& comm_;
  TemporalTrainConfig config_;
  std::unique_ptr<TemporalTask> task_;
  std::unique_ptr<nn::TemporalModel> model_;
  std::unique_ptr<nn::SnapshotSequence> sequence_;
  std::unique_ptr<nn::Adam> adam_;
  std::unique_ptr<nn::PhaseClock> clock_;
  std::unique_ptr<nn::GradientReducer> reducer_;  // one bucket: a window's gradients are final only at its end
  Tensor outputs_, grads_;  // (window * n, out)
  int64_t window_ = 0, num_owned_ = 0;
  std::vector<int64_t> prefetch_snapshots_;  // capacity reserved once (window)
  std::vector<Matrix<const float>> prefetch_inputs_;
};

}  // namespace halogen::train
