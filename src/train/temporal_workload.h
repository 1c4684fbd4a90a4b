#pragma once
// TemporalWorkload: the Workload of dynamic graphs - a recurrent model (nn/temporal_model.h) over the rank's
// snapshot sequence (nn/snapshot_sequence.h) learning a temporal task (train/temporal_task.h). One epoch walks
// the training steps from the zero state in BPTT windows of `window` steps; one optimizer step per window:
// forward through the window (state carried), the task's loss on every step, backward through time in reverse;
// the next window starts from the state the previous one reached (truncated: no gradient crosses the boundary).
// Evaluation: from the zero state, forward over all steps with the current parameters; the task's metrics on
// its test steps (node: on the last step). Every buffer is allocated by the constructor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "train/temporal_task.h"
#include "train/workload.h"

namespace halogen::train {

struct TemporalSetup {
  nn::TemporalModelConfig model;  // kind, hidden, layers, cheb_k, seed (in, out, max_window are set here)
  TaskConfig task;
  int64_t embedding = 0;          // link: embedding width (0: = hidden)
  int64_t window = 0;             // BPTT window in steps; 0 = the whole training span
  bool overlap = true;
  Device device = Device::cpu;
};

class TemporalWorkload final : public Workload {
 public:
  // Collective (the task's global counts).
  TemporalWorkload(comm::Communicator& comm, const graph::Shard& shard, const TemporalSetup& setup);

  const char* model_name() const override { return nn::temporal_kind_name(setup_.model.kind); }
  const char* task_name() const override { return task_kind_name(setup_.task.kind); }
  std::string fingerprint() const override;
  nn::ParameterStore& parameters() override { return model_->store(); }
  nn::PhaseClock& clock() override { return *clock_; }
  kernels::Stream stream() const override { return nullptr; }
  Device device() const override { return Device::cpu; }

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
  int64_t estimated_bytes() const override;

  const TemporalSetup& setup() const { return setup_; }
  int64_t window() const { return window_; }
  nn::TemporalModel& model() { return *model_; }
  TemporalTask& task() { return *task_; }

 private:
  comm::Communicator& comm_;
  TemporalSetup setup_;
  std::unique_ptr<TemporalTask> task_;
  std::unique_ptr<nn::TemporalModel> model_;
  std::unique_ptr<nn::SnapshotSequence> sequence_;
  std::unique_ptr<nn::PhaseClock> clock_;
  Tensor outputs_, grads_;  // (window * n, out)
  int64_t window_ = 0, num_owned_ = 0;
  std::vector<int64_t> prefetch_snapshots_;  // capacity reserved once (window)
  std::vector<Matrix<const float>> prefetch_inputs_;
};

}  // namespace halogen::train
