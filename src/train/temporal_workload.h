#pragma once
// TemporalWorkload: the Workload of dynamic graphs - a recurrent model (nn/temporal_model.h) over the rank's
// snapshot sequence (nn/snapshot_sequence.h) learning a temporal task (train/temporal_task.h). One epoch walks
// the training steps from the zero state in BPTT windows of `window` steps; one optimizer step per window:
// forward through the window (state carried), the task's loss on every step, backward through time in reverse;
// the next window starts from the state the previous one reached (truncated: no gradient crosses the boundary).
// Evaluation: from the zero state, forward over all steps with the current parameters; the task's metrics on
// its test steps (node: on the last step). Every buffer is allocated by the constructor.
//
// Device: with setup.device == cuda the model, its snapshot sequence and the window's inputs, outputs and
// output gradients live on the GPU, and every op runs on one compute stream; the task (its inputs, loss and
// metrics) stays on the host: each step's input is copied to the device, and its output to the host for the
// loss, whose gradient is copied back ((n_own, out) floats each way per step). The link task's row fetch is a
// host exchange, so --task link runs on the CPU only (UserError on cuda).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/compute_stream.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "train/temporal_task.h"
#include "train/workload.h"

namespace halogen::train {

struct TemporalSetup {
  nn::TemporalModelConfig model;  // kind, hidden, layers, cheb_k, seed (in, out, max_window are set here)
  TaskConfig task;
  int64_t embedding = 0;          // link: embedding width (0: = hidden)
  int64_t window = 0;             // BPTT window in steps; 0 = the whole training span, or see the next
  int64_t windows_per_epoch = 0;  // with window == 0 and this > 1: window = ceil(training steps / this)
  bool overlap = true;
  Device device = Device::cpu;
};

// What the workload checks before it is built, with no communication and alike on every rank: the task's
// checks (check_temporal_task), --window within the training steps, --layers for evolvegcn-o only. UserError.
// `halogen train` runs it in run_collectively first, so that such an error is one line.
void check_temporal_setup(const graph::Shard& shard, const TaskConfig& task, int64_t window,
                          const nn::TemporalModelConfig& model);

class TemporalWorkload final : public Workload {
 public:
  // Collective (the task's global counts).
  TemporalWorkload(comm::Communicator& comm, const graph::Shard& shard, const TemporalSetup& setup);

  const char* model_name() const override { return nn::temporal_kind_name(setup_.model.kind); }
  const char* task_name() const override { return task_kind_name(setup_.task.kind); }
  std::string fingerprint() const override;
  // model, task, layers, hidden, cheb_k, embedding, window (resolved), lags, train_fraction, negatives, seed.
  RunOptions options() const override;
  uint64_t seed() const override { return setup_.model.seed; }
  nn::ParameterStore& parameters() override { return model_->store(); }
  nn::PhaseClock& clock() override { return *clock_; }
  kernels::Stream stream() const override { return stream_.get(); }
  Device device() const override { return setup_.device; }

  int64_t steps_per_epoch() const override { return (task_->train_steps() + window_ - 1) / window_; }
  void begin_epoch(int64_t epoch) override;
  double step_local(int64_t epoch, int64_t step, nn::GradientReducer& reducer) override;
  // BPTT: every gradient is final only after the whole window's backward, so nothing can overlap: one bucket.
  int64_t gradient_bucket_bytes() const override { return nn::GradientReducer::kOneBucket; }
  double loss_denominator() const override { return static_cast<double>(task_->train_steps()); }
  Metrics evaluate() override;
  Metrics baselines() override { return task_->baselines(); }
  Metrics summary() const override;
  int64_t snapshots_per_epoch() const override { return task_->train_steps(); }
  // GPU: one unapplied pass over every window and one evaluation (cuSPARSE allocates lazily), leaving no
  // trace. HALOGEN_TEST_WARM_UP_ON_CPU=1 runs it on the CPU too (tests/dynamic/resume.sh checks it changes
  // nothing).
  void warm_up(int64_t epoch) override;
  int64_t estimated_bytes() const override;

  const TemporalSetup& setup() const { return setup_; }
  int64_t window() const { return window_; }
  nn::TemporalModel& model() { return *model_; }
  TemporalTask& task() { return *task_; }

 private:
  // Step `step`'s input on the model's device, in window slot `slot` (the task's host input on the CPU).
  Matrix<const float> input_on_device(int64_t step, int64_t slot);
  // The task's loss of window slot `slot` (step `step`): on the host, through staging copies on the GPU.
  double slot_loss(int64_t step, int64_t slot, float scale);
  // The task observes window slot 0's output (evaluation).
  void observe_slot0(int64_t step);

  comm::Communicator& comm_;
  TemporalSetup setup_;
  nn::ComputeStream stream_;
  std::unique_ptr<TemporalTask> task_;
  std::unique_ptr<nn::TemporalModel> model_;
  std::unique_ptr<nn::SnapshotSequence> sequence_;
  std::unique_ptr<nn::PhaseClock> clock_;
  Tensor outputs_, grads_;  // (window * n, out) on the device
  Tensor inputs_;           // GPU only: (window * n, in) the window's inputs on the device
  // GPU only: the host input each slot of inputs_ holds (task inputs never change, so a slot that already
  // holds a step's input, e.g. the node and link tasks' static features, is not copied again).
  std::vector<const float*> staged_from_;
  Tensor outputs_host_, grads_host_;  // GPU only: (window * n, out) host staging of outputs_ and grads_
  int64_t window_ = 0, num_owned_ = 0;
  std::vector<int64_t> prefetch_snapshots_;  // capacity reserved once (window)
  std::vector<Matrix<const float>> prefetch_inputs_;
};

}  // namespace halogen::train
