#include "train/temporal_workload.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "nn/temporal_registry.h"

namespace halogen::train {

void check_temporal_setup(const graph::Shard& shard, const TaskConfig& task, int64_t window,
                          const nn::TemporalModelConfig& model) {
  const int64_t train = check_temporal_task(shard, task);
  HALOGEN_USER_CHECK(window >= 0 && window <= train,
                     "%s: --window %lld is longer than the training sequence (%lld %s steps)", task.source.c_str(),
                     (long long)window, (long long)train, task_kind_name(task.kind));
  const nn::TemporalSpec& spec = nn::temporal_spec(model.kind);
  std::string stacking;
  for (const nn::TemporalSpec& other : nn::temporal_specs())
    if (other.stacks_layers) stacking += (stacking.empty() ? "" : ", ") + other.name;
  HALOGEN_USER_CHECK(spec.stacks_layers || model.layers == 1, "--layers applies to %s only (%s is one recurrent cell)",
                     stacking.c_str(), spec.name.c_str());
}

TemporalWorkload::TemporalWorkload(comm::Communicator& comm, const graph::Shard& shard, const TemporalSetup& setup)
    : comm_(comm), setup_(setup), stream_(setup.device), num_owned_(shard.num_owned()) {
  HALOGEN_USER_CHECK(comm.device() == setup.device, "the communicator lives on %s, the model on %s",
                     device_name(comm.device()), device_name(setup.device));
  HALOGEN_USER_CHECK(setup.device == Device::cpu || setup.task.kind != TaskKind::link,
                     "--task link runs on the CPU only for now (its row fetch is a host exchange); use --device cpu");
  nn::TemporalModelConfig& model = setup_.model;
  const int64_t embedding = setup.embedding > 0 ? setup.embedding : model.hidden;
  check_temporal_setup(shard, setup.task, setup.window, model);
  task_ = make_temporal_task(comm, shard, setup.task, embedding);
  const int64_t train = task_->train_steps();
  window_ = setup.window > 0 ? setup.window
            : setup.windows_per_epoch > 1
                ? std::max<int64_t>(1, (train + setup.windows_per_epoch - 1) / setup.windows_per_epoch)
                : train;
  model.in = task_->input_width();
  model.out = setup.task.kind == TaskKind::regression ? 1
              : setup.task.kind == TaskKind::node     ? std::max<int32_t>(shard.num_classes, 1)
                                                      : embedding;
  model.max_window = window_;
  model.device = setup.device;
  model.stream = stream_.get();
  model_ = nn::make_temporal_model(model, num_owned_);
  sequence_ = std::make_unique<nn::SnapshotSequence>(comm, shard, nn::temporal_normalization(model.kind),
                                                     nn::temporal_max_width(model), setup.device, stream_.get());
  sequence_->set_overlap(setup.overlap);
  clock_ = nn::make_phase_clock(setup.device);
  sequence_->set_clock(clock_.get());
  prefetch_snapshots_.reserve(window_);
  prefetch_inputs_.reserve(window_);
  outputs_ = Tensor(window_ * num_owned_, model.out, setup.device);
  grads_ = Tensor(window_ * num_owned_, model.out, setup.device);
  if (setup.device != Device::cpu) {
    inputs_ = Tensor(window_ * num_owned_, model.in, setup.device);
    staged_from_.assign(static_cast<size_t>(window_), nullptr);
    outputs_host_ = Tensor(window_ * num_owned_, model.out, Device::cpu);
    grads_host_ = Tensor(window_ * num_owned_, model.out, Device::cpu);
  }
}

Matrix<const float> TemporalWorkload::input_on_device(int64_t step, int64_t slot) {
  Matrix<const float> x = task_->input(step);
  if (setup_.device == Device::cpu) return x;
  const int64_t n = num_owned_;
  Matrix<float> staged = inputs_.matrix().slice_rows(slot * n, (slot + 1) * n);
  HALOGEN_ASSERT(x.stride == x.cols && staged.cols == x.cols);
  if (staged_from_[slot] != x.data) {
    detail::copy_bytes(staged.data, setup_.device, x.data, Device::cpu, sizeof(float) * n * x.cols);
    staged_from_[slot] = x.data;
  }
  return Matrix<const float>(staged);
}

double TemporalWorkload::slot_loss(int64_t step, int64_t slot, float scale) {
  const int64_t n = num_owned_;
  Matrix<float> y = outputs_.matrix().slice_rows(slot * n, (slot + 1) * n);
  Matrix<float> grad = grads_.matrix().slice_rows(slot * n, (slot + 1) * n);
  if (setup_.device == Device::cpu) return task_->loss(step, Matrix<const float>(y), scale, grad);
  // Host staging (the copies are ordered with the compute stream: core/buffer.h, nn/compute_stream.h).
  Matrix<float> y_host = outputs_host_.matrix().slice_rows(slot * n, (slot + 1) * n);
  Matrix<float> grad_host = grads_host_.matrix().slice_rows(slot * n, (slot + 1) * n);
  const size_t bytes = sizeof(float) * n * y.cols;
  detail::copy_bytes(y_host.data, Device::cpu, y.data, setup_.device, bytes);
  const double loss = task_->loss(step, Matrix<const float>(y_host), scale, grad_host);
  detail::copy_bytes(grad.data, setup_.device, grad_host.data, Device::cpu, bytes);
  return loss;
}

void TemporalWorkload::observe_slot0(int64_t step) {
  const int64_t n = num_owned_;
  Matrix<float> y = outputs_.matrix().slice_rows(0, n);
  if (setup_.device == Device::cpu) return task_->observe(step, Matrix<const float>(y));
  Matrix<float> y_host = outputs_host_.matrix().slice_rows(0, n);
  detail::copy_bytes(y_host.data, Device::cpu, y.data, setup_.device, sizeof(float) * n * y.cols);
  task_->observe(step, Matrix<const float>(y_host));
}

std::string TemporalWorkload::fingerprint() const {
  const nn::TemporalModelConfig& m = setup_.model;
  return strformat("model=%s task=%s layers=%d hidden=%lld in=%lld out=%lld cheb_k=%d window=%lld seed=%llu",
                   model_name(), task_name(), m.layers, (long long)m.hidden, (long long)m.in, (long long)m.out,
                   m.cheb_k, (long long)window_, (unsigned long long)m.seed);
}

RunOptions TemporalWorkload::options() const {
  const nn::TemporalModelConfig& m = setup_.model;
  RunOptions options;
  add_option(options, "model", model_name());
  add_option(options, "task", task_name());
  add_option(options, "layers", m.layers);
  add_option(options, "hidden", m.hidden);
  add_option(options, "cheb_k", m.cheb_k);
  add_option(options, "embedding", setup_.embedding);
  add_option(options, "window", window_);
  add_option(options, "lags", setup_.task.lags);
  add_option(options, "train_fraction", setup_.task.train_fraction);
  add_option(options, "negatives", setup_.task.negatives);
  if (setup_.task.kind == TaskKind::regression && setup_.task.scaling != TargetScaling::per_node)
    add_option(options, "target_scaling", target_scaling_name(setup_.task.scaling));
  add_option(options, "seed", m.seed);
  return options;
}

void TemporalWorkload::begin_epoch(int64_t epoch) {
  (void)epoch;
  model_->reset_state();
}

double TemporalWorkload::step_local(int64_t epoch, int64_t step, nn::GradientReducer& reducer) {
  (void)epoch;
  const int64_t n = num_owned_, w0 = step * window_;
  const int64_t k = std::min(window_, task_->train_steps() - w0);
  model_->begin_window();
  model_->store().zero_grads();
  reducer.begin(stream());
  prefetch_snapshots_.clear();
  prefetch_inputs_.clear();
  for (int64_t j = 0; j < k; ++j) {
    prefetch_snapshots_.push_back(task_->snapshot_of(w0 + j));
    prefetch_inputs_.push_back(input_on_device(w0 + j, j));
  }
  model_->prefetch(*sequence_, prefetch_snapshots_, prefetch_inputs_);
  double loss = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int64_t s = w0 + j;
    Matrix<float> y = outputs_.matrix().slice_rows(j * n, (j + 1) * n);
    model_->forward(*sequence_, task_->snapshot_of(s), prefetch_inputs_[j], y, true);
    loss += slot_loss(s, j, 1.0f / static_cast<float>(k));
  }
  for (int64_t j = k - 1; j >= 0; --j) {
    const int64_t s = w0 + j;
    model_->backward(*sequence_, task_->snapshot_of(s), grads_.matrix().slice_rows(j * n, (j + 1) * n));
  }
  reducer.all_ready();
  return loss;
}

Metrics TemporalWorkload::evaluate() {
  const int64_t n = num_owned_, steps = task_->num_steps(), train = task_->train_steps();
  const bool all_steps = task_->kind() == TaskKind::node;
  model_->reset_state();
  for (int64_t s = 0; s < steps; ++s) {
    Matrix<float> y = outputs_.matrix().slice_rows(0, n);
    model_->forward(*sequence_, task_->snapshot_of(s), input_on_device(s, 0), y, false);
    if (all_steps || s >= train) observe_slot0(s);
  }
  return task_->metrics();
}

void TemporalWorkload::warm_up(int64_t epoch) {
  if (setup_.device == Device::cpu && std::getenv("HALOGEN_TEST_WARM_UP_ON_CPU") == nullptr) return;
  // The GPU SpMM makes its cuSPARSE descriptors and workspaces on the first product of each matrix and width
  // (kernels/cuda/spmm.cu): one pass over every window (forward and backward, gradients summed but never
  // applied) and one evaluation make them all before epoch 1. Parameters and Adam are untouched, every epoch
  // starts from the zero state, and the metrics the task accumulated are dropped with the evaluation's result.
  nn::GradientReducer reducer(model_->store(), comm_, nn::GradientReducer::kOneBucket);
  begin_epoch(epoch);
  for (int64_t step = 0; step < steps_per_epoch(); ++step) {
    step_local(epoch, step, reducer);
    reducer.finish();
  }
  model_->store().zero_grads(stream());
  evaluate();
  log::info(strformat("warm-up: one unapplied pass over %lld windows and one evaluation before epoch 1",
                      (long long)steps_per_epoch()));
}

Metrics TemporalWorkload::summary() const {
  return {{"window", static_cast<double>(window_)},
          {"train_steps", static_cast<double>(task_->train_steps())},
          {"test_steps", static_cast<double>(task_->num_steps() - task_->train_steps())},
          {"halo_bytes_sent", static_cast<double>(sequence_->bytes_sent())}};
}

int64_t TemporalWorkload::estimated_bytes() const {
  const int64_t staged = setup_.device == Device::cpu ? 0 : 1;  // GPU: inputs on the device, outputs staged
  const int64_t outputs = (2 + 2 * staged) * window_ * num_owned_ * setup_.model.out * static_cast<int64_t>(sizeof(float)) +
                          staged * window_ * num_owned_ * setup_.model.in * static_cast<int64_t>(sizeof(float));
  // parameters, gradients, Adam m and v
  const int64_t parameters = 4 * model_->store().total_size() * static_cast<int64_t>(sizeof(float));
  return sequence_->allocated_bytes() + model_->scratch_bytes() + task_->bytes() + outputs + parameters;
}

}  // namespace halogen::train
