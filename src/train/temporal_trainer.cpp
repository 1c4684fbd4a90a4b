#include "train/temporal_trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/timer.h"
#include "kernels/ops.h"

namespace halogen::train {
namespace {

std::string metrics_text(const Metrics& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) text += strformat(" %s %.4f", name.c_str(), value);
  return text;
}

}  // namespace

TemporalTrainer::TemporalTrainer(comm::Communicator& comm, const graph::Shard& shard,
                                 const TemporalTrainConfig& config, const std::vector<int32_t>* part_of)
    : comm_(comm), config_(config), num_owned_(shard.num_owned()) {
  HALOGEN_USER_CHECK(comm.device() == Device::cpu,
                     "temporal models (--model %s) run on the CPU only for now; use --device cpu",
                     nn::temporal_kind_name(config.model.kind));
  HALOGEN_USER_CHECK(config.epochs >= 1, "--epochs must be at least 1");
  nn::TemporalModelConfig& model = config_.model;
  const int64_t embedding = config.embedding > 0 ? config.embedding : model.hidden;
  task_ = make_temporal_task(comm, shard, config.task, part_of, embedding);
  const int64_t train = task_->train_steps();
  HALOGEN_USER_CHECK(config.window >= 0 && config.window <= train,
                     "%s: --window %lld is longer than the training sequence (%lld %s steps)",
                     config.task.source.c_str(), (long long)config.window, (long long)train,
                     task_kind_name(config.task.kind));
  window_ = config.window == 0 ? train : config.window;
  model.in = task_->input_width();
  model.out = config.task.kind == TaskKind::regression ? 1
              : config.task.kind == TaskKind::node      ? std::max<int32_t>(shard.num_classes, 1)
                                                        : embedding;
  model.max_window = window_;
  HALOGEN_USER_CHECK(model.kind == nn::TemporalKind::evolvegcn_o || model.layers == 1,
                     "--layers applies to evolvegcn-o only (tgcn and gconvgru are one recurrent cell)");
  model_ = nn::make_temporal_model(model, num_owned_);
  sequence_ = std::make_unique<nn::SnapshotSequence>(comm, shard, nn::temporal_normalization(model.kind),
                                                 nn::temporal_max_width(model));
  sequence_->set_overlap(config.overlap);
  clock_ = nn::make_phase_clock(Device::cpu);
  sequence_->set_clock(clock_.get());
  nn::AdamConfig adam;
  adam.lr = config.lr;
  adam.weight_decay_per_layer.assign(64, config.weight_decay);
  adam_ = std::make_unique<nn::Adam>(model_->store(), adam);
  reducer_ = std::make_unique<nn::GradientReducer>(model_->store(), comm, nn::GradientReducer::kOneBucket,
                                                   clock_.get());
  prefetch_snapshots_.reserve(window_);
  prefetch_inputs_.reserve(window_);
  outputs_ = Tensor(window_ * num_owned_, model.out, Device::cpu);
  grads_ = Tensor(window_ * num_owned_, model.out, Device::cpu);
}

double TemporalTrainer::train_epoch(TemporalEpoch& record) {
  const int64_t n = num_owned_, train = task_->train_steps();
  nn::ParameterStore& store = model_->store();
  clock_->take();
  const double begin = wall_seconds();
  double loss = 0;
  model_->reset_state();
  for (int64_t w0 = 0; w0 < train; w0 += window_) {
    const int64_t k = std::min(window_, train - w0);
    model_->begin_window();
    store.zero_grads();
    prefetch_snapshots_.clear();
    prefetch_inputs_.clear();
    for (int64_t j = 0; j < k; ++j) {
      prefetch_snapshots_.push_back(task_->snapshot_of(w0 + j));
      prefetch_inputs_.push_back(task_->input(w0 + j));
    }
    model_->prefetch(*sequence_, prefetch_snapshots_, prefetch_inputs_);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t s = w0 + j;
      Matrix<float> y = outputs_.matrix().slice_rows(j * n, (j + 1) * n);
      model_->forward(*sequence_, task_->snapshot_of(s), task_->input(s), y, true);
      loss += task_->loss(s, y, 1.0f / static_cast<float>(k), grads_.matrix().slice_rows(j * n, (j + 1) * n));
    }
    for (int64_t j = k - 1; j >= 0; --j) {
      const int64_t s = w0 + j;
      model_->backward(*sequence_, task_->snapshot_of(s), grads_.matrix().slice_rows(j * n, (j + 1) * n));
    }
    reducer_->begin(nullptr);  // BPTT: every gradient is final only after the whole window's backward
    reducer_->all_ready();
    reducer_->finish();
    adam_->step();
  }
  comm_.allreduce_sum(&loss, 1);
  const nn::PhaseTimes phases = clock_->take();
  double times[5] = {1e3 * (wall_seconds() - begin), phases.spmm_ms, phases.halo_total_ms, phases.halo_exposed_ms,
                     phases.allreduce_ms};
  comm_.allreduce_max(times, 5);
  record.epoch_ms = times[0];
  record.spmm_ms = times[1];
  record.halo_ms = times[2];
  record.halo_exposed_ms = times[3];
  record.allreduce_ms = times[4];
  return loss / static_cast<double>(train);
}

Metrics TemporalTrainer::evaluate() {
  const int64_t n = num_owned_, steps = task_->num_steps(), train = task_->train_steps();
  const bool all_steps = task_->kind() == TaskKind::node;
  model_->reset_state();
  for (int64_t s = 0; s < steps; ++s) {
    Matrix<float> y = outputs_.matrix().slice_rows(0, n);
    model_->forward(*sequence_, task_->snapshot_of(s), task_->input(s), y, false);
    if (all_steps || s >= train) task_->observe(s, Matrix<const float>(y));
  }
  return task_->metrics();
}

TemporalResult TemporalTrainer::run() {
  TemporalResult result;
  double before[2] = {static_cast<double>(detail::bytes_in_use(Device::cpu)),
                      static_cast<double>(detail::peak_bytes(Device::cpu))};
  comm_.allreduce_max(before, 2);
  result.bytes_before_training = static_cast<int64_t>(before[0]);
  if (comm_.rank() == 0) {
    log::info(strformat("memory: %.1f MiB of cpu buffers per rank (max over ranks; sequence %.1f MiB, model %.1f "
                        "MiB, task %.1f MiB on rank 0), all allocated before epoch 1",
                        before[0] / 1048576.0, sequence_->allocated_bytes() / 1048576.0,
                        (model_->scratch_bytes() + 4.0 * model_->store().total_size() * 2) / 1048576.0,
                        task_->bytes() / 1048576.0));
  }
  result.baselines = task_->baselines();
  FILE* metrics_file = nullptr;
  if (!config_.metrics_path.empty() && comm_.rank() == 0) {
    metrics_file = std::fopen(config_.metrics_path.c_str(), "w");
    HALOGEN_USER_CHECK(metrics_file != nullptr, "%s: cannot create the metrics file", config_.metrics_path.c_str());
  }
  auto write = [&](const nlohmann::json& j) {
    if (metrics_file == nullptr) return;
    std::fprintf(metrics_file, "%s\n", j.dump().c_str());
    std::fflush(metrics_file);
  };
  if (!result.baselines.empty() && comm_.rank() == 0) log::info("baselines:" + metrics_text(result.baselines));
  double trained_ms = 0, exposed_ms = 0;
  for (int64_t epoch = 1; epoch <= config_.epochs; ++epoch) {
    TemporalEpoch record;
    record.epoch = epoch;
    record.loss = train_epoch(record);
    HALOGEN_USER_CHECK(std::isfinite(record.loss),
                       "epoch %lld: the training loss is %g (diverged; lower --lr or check the inputs)",
                       (long long)epoch, record.loss);
    trained_ms += record.epoch_ms;
    exposed_ms += record.halo_exposed_ms + record.allreduce_ms;
    if (epoch % config_.eval_every == 0 || epoch == config_.epochs) {
      const double begin = wall_seconds();
      record.metrics = evaluate();
      double eval_ms = 1e3 * (wall_seconds() - begin);
      comm_.allreduce_max(&eval_ms, 1);
      record.eval_ms = eval_ms;
      record.evaluated = true;
      result.final_metrics = record.metrics;
      const double rate = 1e3 * static_cast<double>(task_->train_steps()) / record.epoch_ms;
      if (config_.print_epochs && comm_.rank() == 0) {
        log::info(strformat("epoch %lld/%lld | loss %.4f |%s | %.1f ms, %.1f snapshots/s | spmm %.1f halo %.1f "
                            "(exposed %.1f) allreduce %.1f",
                            (long long)epoch, (long long)config_.epochs, record.loss,
                            metrics_text(record.metrics).c_str(), record.epoch_ms, rate, record.spmm_ms,
                            record.halo_ms, record.halo_exposed_ms, record.allreduce_ms));
      }
      nlohmann::json line = {{"epoch", epoch},           {"loss", record.loss},
                             {"epoch_ms", record.epoch_ms}, {"spmm_ms", record.spmm_ms},
                             {"halo_ms", record.halo_ms}, {"halo_exposed_ms", record.halo_exposed_ms},
                             {"allreduce_ms", record.allreduce_ms}, {"eval_ms", record.eval_ms},
                             {"snapshots_per_s", rate}};
      for (const auto& [name, value] : record.metrics) line[name] = value;
      write(line);
    }
    result.epochs.push_back(record);
  }
  result.mean_epoch_ms = trained_ms / static_cast<double>(config_.epochs);
  result.snapshots_per_s = 1e3 * static_cast<double>(task_->train_steps() * config_.epochs) / trained_ms;
  result.exposed_comm_share = trained_ms > 0 ? exposed_ms / trained_ms : 0.0;
  double allocated = static_cast<double>(detail::peak_bytes(Device::cpu));
  comm_.allreduce_max(&allocated, 1);
  result.allocated_bytes = static_cast<int64_t>(allocated);
  if (comm_.rank() == 0 && result.allocated_bytes > std::max<int64_t>(result.bytes_before_training,
                                                                       static_cast<int64_t>(before[1]))) {
    log::info(strformat("warning: buffers grew during training, to %.1f MiB", allocated / 1048576.0));
  }
  nlohmann::json final_line = {{"final", true},
                               {"model", nn::temporal_kind_name(config_.model.kind)},
                               {"task", task_kind_name(config_.task.kind)},
                               {"ranks", comm_.size()},
                               {"epochs", config_.epochs},
                               {"window", window_},
                               {"train_steps", task_->train_steps()},
                               {"test_steps", task_->num_steps() - task_->train_steps()},
                               {"mean_epoch_ms", result.mean_epoch_ms},
                               {"snapshots_per_s", result.snapshots_per_s},
                               {"exposed_comm_share", result.exposed_comm_share},
                               {"halo_bytes_sent", sequence_->bytes_sent()},
                               {"allocated_bytes", result.allocated_bytes},
                               {"bytes_before_training", result.bytes_before_training},
                               {"final_loss", result.epochs.back().loss}};
  for (const auto& [name, value] : result.final_metrics) final_line[name] = value;
  for (const auto& [name, value] : result.baselines) final_line[name] = value;
  write(final_line);
  if (metrics_file != nullptr) std::fclose(metrics_file);
  return result;
}

}  // namespace halogen::train
