#include "train/trainer.h"

#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/checkpoint.h"
#include "train/collective_error.h"
#include "train/memory_estimate.h"
#include "train/metrics.h"

namespace halogen::train {
namespace {

nn::AdamConfig adam_config(const TrainConfig& config) {
  nn::AdamConfig adam;
  adam.lr = config.lr;
  adam.weight_decay_per_layer.assign(config.weight_decay_all_layers ? config.model.layers : 1, config.weight_decay);
  return adam;
}

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

// Throws on every rank: the message on rank 0, PeerFailed elsewhere (the condition is known to all ranks).
[[noreturn]] void fail_everywhere(comm::Communicator& comm, const std::string& message) {
  if (comm.rank() == 0) throw UserError(message);
  throw PeerFailed();
}

}  // namespace

Trainer::Trainer(comm::Communicator& comm, const graph::Shard& shard, const TrainConfig& config)
    : comm_(comm), config_(config), model_(config.model, comm, shard, config.device),
      adam_(model_.parameters(), adam_config(config)), num_features_(shard.num_features),
      num_classes_(shard.num_classes) {
  HALOGEN_USER_CHECK(config.epochs >= 1, "--epochs must be at least 1");
  HALOGEN_USER_CHECK(config.eval_every >= 1, "--eval-every must be at least 1");
  const std::array<int64_t, 3> local = model_.split_sizes_local();
  for (int s = 0; s < 3; ++s) global_split_sizes_[s] = local[s];
  comm_.allreduce_sum(global_split_sizes_, 3);
  if (global_split_sizes_[0] == 0)
    fail_everywhere(comm_, "the graph has no labelled training vertices (/split/train is empty)");
  nn::RankShape shape;
  shape.num_owned = shard.num_owned();
  shape.num_halo = shard.num_halo();
  shape.nnz = shard.nnz();
  shape.num_send = static_cast<int64_t>(shard.plan.send_idx.size());
  shape.num_features = shard.num_features;
  shape.num_classes = shard.num_classes;
  shape.num_split_rows = local[0] + local[1] + local[2];
  shape.sparse_feature_nonzeros = model_.sparse_input_nonzeros();
  estimated_bytes_ = estimate_rank_memory(config.model, shape);
}

std::string Trainer::fingerprint() const {
  const nn::ModelConfig& m = config_.model;
  return strformat("model=%s layers=%d hidden=%lld features=%lld classes=%lld seed=%llu",
                   m.kind == nn::ConvKind::gcn ? "gcn" : "sage", m.layers, (long long)m.hidden,
                   (long long)num_features_, (long long)num_classes_, (unsigned long long)m.seed);
}

void Trainer::save_checkpoint(int64_t epoch, const TrainResult& progress, int64_t evals_since_best) {
  // Rank 0 writes; the outcome is shared so that a failure (disk full) stops every rank.
  run_collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    CheckpointState s;
    s.fingerprint = fingerprint();
    s.epoch = epoch;
    s.adam_steps = adam_.steps_done();
    s.best_epoch = progress.best_epoch;
    s.best_valid_acc = progress.best_valid_acc;
    s.test_acc_at_best = progress.test_acc_at_best;
    s.train_acc_at_best = progress.train_acc_at_best;
    s.evals_since_best = evals_since_best;
    const int64_t n = model_.parameters().total_size();
    s.params.resize(n);
    s.adam_m.resize(n);
    s.adam_v.resize(n);
    model_.parameters().params().copy_to_host(s.params.data());
    adam_.first_moment().copy_to_host(s.adam_m.data());
    adam_.second_moment().copy_to_host(s.adam_v.data());
    write_checkpoint(config_.checkpoint_dir, s);
  });
}

void Trainer::evaluate(EpochRecord& record) {
  Stopwatch watch;
  const std::array<int64_t, 3> correct_local = model_.evaluate_local();
  int64_t correct[3] = {correct_local[0], correct_local[1], correct_local[2]};
  comm_.allreduce_sum(correct, 3);
  auto ratio = [&](int s) {
    return global_split_sizes_[s] > 0 ? static_cast<double>(correct[s]) / static_cast<double>(global_split_sizes_[s]) : 0.0;
  };
  record.evaluated = true;
  record.train_acc = ratio(0);
  record.valid_acc = ratio(1);
  record.test_acc = ratio(2);
  record.eval_ms = watch.milliseconds();
}

TrainResult Trainer::run() {
  TrainResult result;
  result.best_valid_acc = -1;
  int64_t evals_since_best = 0;
  int64_t first_epoch = 1;

  if (config_.resume) {
    HALOGEN_USER_CHECK(!config_.checkpoint_dir.empty(), "--resume needs --checkpoint DIR");
    CheckpointState s;
    run_collectively(comm_, [&] {
      s = read_checkpoint(config_.checkpoint_dir);
      HALOGEN_USER_CHECK(s.fingerprint == fingerprint(), "%s: checkpoint is for \"%s\", this run is \"%s\"",
                         checkpoint_path(config_.checkpoint_dir).c_str(), s.fingerprint.c_str(), fingerprint().c_str());
      HALOGEN_USER_CHECK(static_cast<int64_t>(s.params.size()) == model_.parameters().total_size() &&
                             s.adam_m.size() == s.params.size() && s.adam_v.size() == s.params.size(),
                         "%s: checkpoint holds %zu parameters, the model has %lld",
                         checkpoint_path(config_.checkpoint_dir).c_str(), s.params.size(),
                         (long long)model_.parameters().total_size());
    });
    model_.parameters().params().copy_from_host(s.params.data(), static_cast<int64_t>(s.params.size()));
    adam_.first_moment().copy_from_host(s.adam_m.data(), static_cast<int64_t>(s.adam_m.size()));
    adam_.second_moment().copy_from_host(s.adam_v.data(), static_cast<int64_t>(s.adam_v.size()));
    adam_.set_steps_done(s.adam_steps);
    first_epoch = s.epoch + 1;
    result.best_epoch = s.best_epoch;
    result.best_valid_acc = s.best_valid_acc;
    result.test_acc_at_best = s.test_acc_at_best;
    result.train_acc_at_best = s.train_acc_at_best;
    evals_since_best = s.evals_since_best;
    log::info(strformat("resumed from %s after epoch %lld", checkpoint_path(config_.checkpoint_dir).c_str(),
                        (long long)s.epoch));
  }

  std::unique_ptr<MetricsWriter> metrics;
  run_collectively(comm_, [&] {
    if (comm_.rank() == 0 && !config_.metrics_path.empty()) metrics = std::make_unique<MetricsWriter>(config_.metrics_path);
  });

  const Device device = model_.device();
  const float loss_scale = 1.0f / static_cast<float>(global_split_sizes_[0]);
  if (device == Device::cuda) {
    // The GPU SpMM makes its cuSPARSE descriptors, workspaces and index copies (Buffers) on the first product of
    // each matrix and width (kernels/cuda/spmm.cu). One training step without an update makes them here, so
    // that everything is allocated before epoch 1 and epoch 1 is timed like the others. It changes no state the
    // epochs read: parameters and Adam are untouched, gradients are zeroed by every step, dropout is keyed by
    // the epoch. Collective like an epoch (every rank runs it).
    model_.train_step_local(first_epoch, loss_scale);
  }
  double memory[3] = {static_cast<double>(detail::bytes_in_use(device)), static_cast<double>(estimated_bytes_),
                      static_cast<double>(detail::peak_bytes(device))};
  comm_.allreduce_max(memory, 3);
  result.allocated_bytes = static_cast<int64_t>(memory[0]);
  result.estimated_bytes = static_cast<int64_t>(memory[1]);
  log::info(strformat("memory: %.1f MiB of %s buffers per rank (max over ranks; estimate %.1f MiB; peak so far "
                      "%.1f MiB), all allocated before epoch 1",
                      mib(memory[0]), device_name(device), mib(memory[1]), mib(memory[2])));

  // Phase times: wall clock on the CPU, CUDA events on the GPU (nn/profile.h), read once per epoch after the
  // loss and the parameter check have synchronised. The epoch time is the host's wall clock: the epoch ends
  // with the parameter check, which reads a scalar from the device, so it includes all the GPU work.
  nn::PhaseClock& clock = model_.clock();
  const kernels::Stream stream = model_.stream();
  double total_epoch_ms = 0;
  Tensor& grads = model_.parameters().grads();

  for (int64_t epoch = first_epoch; epoch <= config_.epochs; ++epoch) {
    clock.take();  // drop what the last evaluation recorded
    EpochRecord record;
    record.epoch = epoch;
    Stopwatch watch;
    double loss = model_.train_step_local(epoch, loss_scale);
    clock.begin(nn::Phase::allreduce, stream);
    comm_.allreduce_sum(grads.data(), grads.size(), stream);
    comm_.allreduce_sum(&loss, 1);
    clock.end(nn::Phase::allreduce, stream);
    loss /= static_cast<double>(global_split_sizes_[0]);
    if (!std::isfinite(loss)) {
      double first_bad = model_.first_nonfinite_layer_local();
      if (first_bad < 0) first_bad = 1e9;
      first_bad = -first_bad;  // max of the negated = min over ranks
      comm_.allreduce_max(&first_bad, 1);
      const int layer = static_cast<int>(-first_bad);
      fail_everywhere(comm_, layer < model_.num_layers()
                                 ? strformat("epoch %lld: the loss is %g; first non-finite values in the output of "
                                             "layer %d", (long long)epoch, loss, layer)
                                 : strformat("epoch %lld: the loss is %g (layer outputs are finite: the softmax "
                                             "overflowed)", (long long)epoch, loss));
    }
    {
      nn::PhaseScope timer(clock, nn::Phase::optimizer, stream);
      adam_.step(stream);
    }
    const int bad_parameter_layer = model_.first_nonfinite_parameter_layer();
    if (bad_parameter_layer >= 0)
      fail_everywhere(comm_, strformat("epoch %lld: the parameters of layer %d became non-finite after the "
                                       "update (lower --lr?)", (long long)epoch, bad_parameter_layer));
    record.loss = loss;
    record.epoch_ms = watch.milliseconds();

    // Phase times of the training step only (evaluation below records into the clock too: dropped above).
    const nn::PhaseTimes times = clock.take();
    double phase[7] = {record.epoch_ms, times.spmm_ms, times.gemm_ms, times.halo_total_ms, times.halo_exposed_ms,
                       times.allreduce_ms, 0.0};
    const bool evaluate_now = epoch % config_.eval_every == 0 || epoch == config_.epochs;
    if (evaluate_now) evaluate(record);
    phase[6] = record.eval_ms;
    comm_.allreduce_max(phase, 7);
    record.epoch_ms = phase[0];
    record.spmm_ms = phase[1];
    record.gemm_ms = phase[2];
    record.halo_ms = phase[3];
    record.halo_exposed_ms = phase[4];
    record.allreduce_ms = phase[5];
    record.eval_ms = phase[6];
    record.other_ms = std::max(0.0, record.epoch_ms - record.spmm_ms - record.gemm_ms - record.halo_exposed_ms -
                                        record.allreduce_ms);
    total_epoch_ms += record.epoch_ms;
    result.epochs.push_back(record);
    result.last_epoch = epoch;

    bool stop = false;
    if (evaluate_now) {
      if (record.valid_acc > result.best_valid_acc) {
        result.best_valid_acc = record.valid_acc;
        result.best_epoch = epoch;
        result.test_acc_at_best = record.test_acc;
        result.train_acc_at_best = record.train_acc;
        evals_since_best = 0;
      } else {
        ++evals_since_best;
        stop = config_.patience > 0 && evals_since_best >= config_.patience;
      }
      if (config_.print_epochs) log::info(epoch_line(record, config_.epochs));
      if (metrics) metrics->epoch(record);
    }
    const bool last = stop || epoch == config_.epochs;
    if (!config_.checkpoint_dir.empty() &&
        (last || (config_.checkpoint_every > 0 && epoch % config_.checkpoint_every == 0)))
      save_checkpoint(epoch, result, evals_since_best);
    if (stop) {
      result.stopped_early = true;
      log::info(strformat("early stop after epoch %lld: no better valid accuracy for %lld evaluations",
                          (long long)epoch, (long long)config_.patience));
      break;
    }
  }
  double peak = static_cast<double>(detail::peak_bytes(device));
  comm_.allreduce_max(&peak, 1);
  log::info(strformat("memory: peak %.1f MiB of %s buffers per rank over the run (max over ranks)", mib(peak),
                      device_name(device)));
  if (!result.epochs.empty()) result.mean_epoch_ms = total_epoch_ms / static_cast<double>(result.epochs.size());
  if (result.best_valid_acc < 0) result.best_valid_acc = 0;
  if (metrics) metrics->final(result, comm_.size());
  return result;
}

}  // namespace halogen::train
