#include "train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "train/checkpoint.h"
#include "train/collective_error.h"
#include "train/metrics.h"
#include "train/node_classification.h"
#include "train/tensorboard.h"
#include "train/trace.h"

namespace halogen::train {
namespace {

constexpr int kPhaseFigures = 9;  // take_phase_times: epoch, 6 phase times, spmm bytes, gemm flops

double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

nn::AdamConfig adam_config(const RunConfig& config, const Workload& workload, const nn::ParameterStore& store) {
  nn::AdamConfig adam;
  adam.lr = config.lr;
  adam.clip_grad_norm = config.clip_grad_norm;
  int layers = 1;
  for (int k = 0; k < store.count(); ++k) layers = std::max(layers, store.info(k).layer + 1);
  adam.weight_decay_per_layer =
      workload.weight_decay_per_layer(layers, config.weight_decay, config.weight_decay_all_layers);
  return adam;
}

// Builds a workload collectively: a rank that fails to build its part (a bad shard) takes every rank down.
template <typename Make>
std::unique_ptr<Workload> build_collectively(comm::Communicator& comm, Make make) {
  std::unique_ptr<Workload> workload;
  run_collectively(comm, [&] { workload = make(); });
  return workload;
}

// Fault injection for tests (HALOGEN_FAULT_KILL_AT_EPOCH=E): rank 0 kills itself with SIGKILL as epoch E starts,
// as a crash or a preempted job would; the checkpoints written so far are what a resumed run finds. Unset (or
// not a positive number): never.
int64_t kill_at_epoch() {
  const char* value = std::getenv("HALOGEN_FAULT_KILL_AT_EPOCH");
  const int64_t epoch = value != nullptr ? std::atoll(value) : 0;
  return epoch > 0 ? epoch : -1;
}

// Whether stdout surely reaches a person's terminal. Under mpirun (Open MPI forwards each rank's output
// through a pseudo-terminal whatever its final destination) or srun, a rank cannot tell, so it says no: the
// periodic progress lines are then printed, which costs an interactive user one extra line every
// --progress-every seconds.
bool stdout_reaches_terminal() {
  if (!isatty(STDOUT_FILENO)) return false;
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (std::getenv(launcher) != nullptr) return false;
  return true;
}

// "1h 02m", "3m 07s", "42s".
std::string duration_text(double seconds) {
  const long long s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return strformat("%lldh %02lldm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return strformat("%lldm %02llds", s / 60, s % 60);
  return strformat("%llds", s);
}

}  // namespace

// Loop state that a checkpoint carries besides the weights.
struct Trainer::Progress {
  int64_t evals_since_best = 0;
};

Trainer::Trainer(comm::Communicator& comm, std::unique_ptr<Workload> workload, const RunConfig& config)
    : comm_(comm), workload_(std::move(workload)), config_(config),
      phase_buffer_(static_cast<size_t>(kPhaseFigures + comm.size())) {
  check_config();
  adam_ = std::make_unique<nn::Adam>(workload_->parameters(), adam_config(config_, *workload_, workload_->parameters()));
  reducer_ = std::make_unique<nn::GradientReducer>(workload_->parameters(), comm_, workload_->gradient_bucket_bytes(),
                                                   &workload_->clock());
}

Trainer::Trainer(comm::Communicator& comm, const graph::Shard& shard, const TrainConfig& config)
    : Trainer(comm, build_collectively(comm, [&] {
                return std::make_unique<NodeClassification>(comm, shard, config.model, config.device);
              }),
              config) {}

Trainer::Trainer(comm::Communicator& comm, graph::Shard&& shard, const TrainConfig& config)
    : Trainer(comm, build_collectively(comm, [&] {
                return std::make_unique<NodeClassification>(comm, std::move(shard), config.model, config.device);
              }),
              config) {}

Trainer::Trainer(comm::Communicator& comm, const graph::Shard& shard, const TemporalTrainConfig& config)
    : Trainer(comm, build_collectively(comm, [&] {
                return std::make_unique<TemporalWorkload>(comm, shard, config);
              }),
              config) {}

Trainer::~Trainer() = default;

void Trainer::check_config() const {
  HALOGEN_USER_CHECK(config_.epochs >= 1, "--epochs must be at least 1");
  HALOGEN_USER_CHECK(config_.eval_every >= 1, "--eval-every must be at least 1");
  HALOGEN_USER_CHECK(!config_.resume || !config_.checkpoint_dir.empty(), "--resume needs --checkpoint DIR");
  HALOGEN_USER_CHECK(!config_.save_best || !config_.checkpoint_dir.empty(), "--save-best needs --checkpoint DIR");
}

[[noreturn]] void Trainer::fail_everywhere(const std::string& message) {
  if (comm_.rank() == 0) throw UserError(message);
  throw PeerFailed();
}

// The options that determine what this run computes: the workload's, the optimizer's, the preprocessing.
RunOptions Trainer::run_options() const {
  RunOptions options = workload_->options();
  add_option(options, "lr", config_.lr);
  add_option(options, "weight_decay", config_.weight_decay);
  add_option(options, "weight_decay_all_layers", config_.weight_decay_all_layers);
  if (config_.clip_grad_norm > 0) add_option(options, "clip_grad_norm", config_.clip_grad_norm);
  options.insert(options.end(), config_.preprocessing.begin(), config_.preprocessing.end());
  return options;
}

void Trainer::save_checkpoint(const std::string& path, int64_t epoch, const TrainResult& result,
                              const Progress& progress) {
  // Rank 0 writes (weights are replicated); the outcome is shared so that a failure (disk full) stops every rank.
  run_collectively(comm_, [&] {
    if (comm_.rank() != 0) return;
    CheckpointState s;
    CheckpointHeader& h = s.header;
    h.model = workload_->model_name();
    h.task = workload_->task_name();
    h.fingerprint = workload_->fingerprint();
    h.graph_checksum = config_.graph_checksum;
    h.partition = config_.partition;
    h.config = options_json(run_options());
    h.epoch = epoch;
    h.adam_steps = adam_->steps_done();
    h.best_epoch = result.best_epoch;
    h.best_valid_acc = result.best_valid_acc;
    h.best_valid_loss = result.best_valid_loss;
    h.test_acc_at_best = result.test_acc_at_best;
    h.train_acc_at_best = result.train_acc_at_best;
    h.evals_since_best = progress.evals_since_best;
    h.rng_seed = workload_->seed();
    const nn::ParameterStore& store = workload_->parameters();
    s.layout = parameter_layout(store);
    const int64_t n = store.total_size();
    s.params.resize(n);
    s.adam_m.resize(n);
    s.adam_v.resize(n);
    store.params().copy_to_host(s.params.data());
    adam_->first_moment().copy_to_host(s.adam_m.data());
    adam_->second_moment().copy_to_host(s.adam_v.data());
    write_checkpoint(path, s);
  });
}

// Loads the checkpoint into the weights, Adam and the loop state; returns the first epoch to run. Refuses
// (collectively, one message) a checkpoint of another graph, of other options or of another model shape.
int64_t Trainer::restore(TrainResult& result, Progress& progress) {
  if (!config_.resume) return 1;
  CheckpointState s;
  nn::ParameterStore& store = workload_->parameters();
  const std::string path = last_checkpoint_path(config_.checkpoint_dir);
  run_collectively(comm_, [&] {
    std::error_code error;
    HALOGEN_USER_CHECK(std::filesystem::exists(path, error), "%s: no checkpoint to resume from (run once with "
                       "--checkpoint %s)", path.c_str(), config_.checkpoint_dir.c_str());
    const CheckpointHeader h = read_checkpoint_header(path);
    HALOGEN_USER_CHECK(h.graph_checksum == config_.graph_checksum,
                       "%s: --resume on another graph: the checkpoint was trained on the graph with checksum %s, "
                       "this partition's graph has checksum %s%s", path.c_str(), h.graph_checksum.c_str(),
                       config_.graph_checksum.c_str(),
                       io::checksum_kind_hint(h.graph_checksum, config_.graph_checksum).c_str());
    const std::string changed = compare_run_options(h.config, run_options(), config_.allow_lr_change);
    HALOGEN_USER_CHECK(changed.empty(), "%s: --resume with a changed option: %s (only --epochs, --metrics, --quiet, "
                       "--eval-every, --patience and --checkpoint-every may change on resume)", path.c_str(),
                       changed.c_str());
    HALOGEN_USER_CHECK(h.epoch < config_.epochs,
                       "%s: the checkpoint is after epoch %lld, so --epochs %lld leaves nothing to train (pass "
                       "--epochs above %lld to continue)", path.c_str(), (long long)h.epoch,
                       (long long)config_.epochs, (long long)h.epoch);
    HALOGEN_USER_CHECK(h.fingerprint == workload_->fingerprint(), "%s: checkpoint is for \"%s\", this run is \"%s\"",
                       path.c_str(), h.fingerprint.c_str(), workload_->fingerprint().c_str());
    s = read_checkpoint(path, parameter_layout(store), /*with_optimizer=*/true);
  }, Report::lowest_failing_rank);
  store.params().copy_from_host(s.params.data(), static_cast<int64_t>(s.params.size()));
  adam_->first_moment().copy_from_host(s.adam_m.data(), static_cast<int64_t>(s.adam_m.size()));
  adam_->second_moment().copy_from_host(s.adam_v.data(), static_cast<int64_t>(s.adam_v.size()));
  adam_->set_steps_done(s.header.adam_steps);
  result.best_epoch = s.header.best_epoch;
  result.best_valid_acc = s.header.best_valid_acc;
  result.best_valid_loss = s.header.best_valid_loss;
  result.test_acc_at_best = s.header.test_acc_at_best;
  result.train_acc_at_best = s.header.train_acc_at_best;
  progress.evals_since_best = s.header.evals_since_best;
  log::info(strformat("resumed from %s after epoch %lld", path.c_str(), (long long)s.header.epoch));
  if (config_.save_best && result.best_epoch > 0 && comm_.rank() == 0) {
    const std::string best = best_checkpoint_path(config_.checkpoint_dir);
    std::error_code error;
    if (!std::filesystem::exists(best, error))
      log::warn(strformat("--save-best: %s, the model of epoch %lld (valid %.4f), is gone and cannot be rebuilt "
                          "from last.h5; it is written again only when an epoch beats valid %.4f (until then "
                          "predict --checkpoint %s reads last.h5)",
                          best.c_str(), (long long)result.best_epoch, result.best_valid_acc, result.best_valid_acc,
                          config_.checkpoint_dir.c_str()));
  }
  if (!config_.partition.empty() && s.header.partition != config_.partition)
    log::info(strformat("(the checkpoint was written on another partition of this graph: %s)",
                        s.header.partition.c_str()));
  return s.header.epoch + 1;
}

void Trainer::report_memory_before_training(TrainResult& result) {
  const Device device = workload_->device();
  double memory[3] = {static_cast<double>(detail::bytes_in_use(device)),
                      static_cast<double>(workload_->estimated_bytes()),
                      static_cast<double>(detail::peak_bytes(device))};
  comm_.allreduce_max(memory, 3);
  detail::start_peak_window(device);  // finish() reports this loop's peak, not an earlier run's in this process
  result.bytes_before_training = static_cast<int64_t>(memory[0]);
  result.estimated_bytes = static_cast<int64_t>(memory[1]);
  log::info(strformat("memory: %.1f MiB of %s buffers per rank (max over ranks; estimate %.1f MiB; peak so far "
                      "%.1f MiB), all allocated before epoch 1",
                      mib(memory[0]), device_name(device), mib(memory[1]), mib(memory[2])));
}

void Trainer::warm_up_communicator() {
  nn::ParameterStore& store = workload_->parameters();
  const kernels::Stream stream = workload_->stream();
  store.zero_grads(stream);  // every step zeroes them again before its backward: nothing of this survives
  nn::GradientReducer reducer(store, comm_, workload_->gradient_bucket_bytes());  // no clock: untimed
  reducer.begin(stream);
  reducer.all_ready();
  reducer.finish();
  store.zero_grads(stream);
  double loss = 0.0;  // the per-step loss sum goes through the host communicator
  comm_.allreduce_sum(&loss, 1);
}

// One optimizer step: the workload's gradients, summed over ranks; the loss checked; Adam. Returns the step's
// global loss terms (sum over ranks).
double Trainer::optimizer_step(int64_t epoch, int64_t step) {
  nn::PhaseClock& clock = workload_->clock();
  const kernels::Stream stream = workload_->stream();
  double loss = workload_->step_local(epoch, step, *reducer_);
  reducer_->finish();  // times Phase::allreduce (in flight) and Phase::allreduce_exposed (the wait)
  clock.begin(nn::Phase::allreduce, stream);
  clock.begin(nn::Phase::allreduce_exposed, stream);
  comm_.allreduce_sum(&loss, 1);
  clock.end(nn::Phase::allreduce_exposed, stream);
  clock.end(nn::Phase::allreduce, stream);
  if (!std::isfinite(loss)) {
    const std::string where = workload_->diagnose_nonfinite_loss();
    fail_everywhere(strformat("epoch %lld: the loss is %g%s%s (diverged; lower --lr or check the inputs)",
                              (long long)epoch, loss / workload_->loss_denominator(), where.empty() ? "" : "; ",
                              where.c_str()));
  }
  {
    nn::PhaseScope timer(clock, nn::Phase::optimizer, stream);
    adam_->step(stream);
  }
  const int bad_layer = workload_->parameters().first_nonfinite_layer(stream);
  if (bad_layer >= 0)
    fail_everywhere(strformat("epoch %lld: the parameters of layer %d became non-finite after the update (lower "
                              "--lr?)", (long long)epoch, bad_layer));
  return loss;
}

// Phase times of the training pass, max over ranks (evaluation records into the clock too: dropped before).
void Trainer::take_phase_times(EpochRecord& record) {
  const nn::PhaseTimes times = workload_->clock().take();
  // Seven phase times and the spmm and gemm work, then one slot per rank for its compute (epoch minus the time it
  // waited for others, >= 0; the other ranks' slots are 0), all maxed in one reduction: the per-rank compute comes
  // back whole, so the maximum, the minimum and the slowest rank are read off it.
  std::vector<double>& phase = phase_buffer_;
  std::fill(phase.begin(), phase.end(), 0.0);
  const double own[kPhaseFigures] = {record.epoch_ms,     times.spmm_ms,          times.gemm_ms,
                                     times.halo_total_ms, times.halo_exposed_ms,  times.allreduce_ms,
                                     times.allreduce_exposed_ms, times.spmm_bytes, times.gemm_flops};
  std::copy(own, own + kPhaseFigures, phase.begin());
  phase[kPhaseFigures + comm_.rank()] =
      std::max(0.0, record.epoch_ms - times.halo_exposed_ms - times.allreduce_exposed_ms);
  comm_.allreduce_max(phase.data(), static_cast<int64_t>(phase.size()));
  const auto compute = phase.begin() + kPhaseFigures;
  const auto slowest = std::max_element(compute, phase.end());
  record.compute_ms_max = *slowest;
  record.compute_ms_min = *std::min_element(compute, phase.end());
  record.slowest_rank = static_cast<int>(slowest - compute);
  record.epoch_ms = phase[0];
  record.spmm_ms = phase[1];
  record.gemm_ms = phase[2];
  record.halo_ms = phase[3];
  record.halo_exposed_ms = phase[4];
  record.allreduce_ms = phase[5];
  record.allreduce_exposed_ms = phase[6];
  record.spmm_bytes = phase[7];
  record.gemm_flops = phase[8];
  record.other_ms = std::max(0.0, record.epoch_ms - record.spmm_ms - record.gemm_ms - record.halo_exposed_ms -
                                      record.allreduce_exposed_ms);
  const int64_t snapshots = workload_->snapshots_per_epoch();
  if (snapshots > 0 && record.epoch_ms > 0) record.snapshots_per_s = 1e3 * static_cast<double>(snapshots) / record.epoch_ms;
}

void Trainer::train_epoch(int64_t epoch, EpochRecord& record) {
  workload_->clock().take();  // drop what the last evaluation recorded
  record.epoch = epoch;
  Stopwatch watch;
  workload_->begin_epoch(epoch);
  double loss = 0;
  for (int64_t step = 0; step < workload_->steps_per_epoch(); ++step) loss += optimizer_step(epoch, step);
  record.loss = loss / workload_->loss_denominator();
  // The epoch ends with the parameter check, which reads a scalar from the device: the wall clock includes all
  // the GPU work.
  record.epoch_ms = watch.milliseconds();
  take_phase_times(record);
}

void Trainer::evaluate(EpochRecord& record) {
  Stopwatch watch;
  record.metrics = workload_->evaluate();
  auto value = [&](const char* name) {
    const auto it = record.metrics.find(name);
    return it == record.metrics.end() ? 0.0 : it->second;
  };
  record.train_acc = value("train_acc");
  record.valid_acc = value("valid_acc");
  record.test_acc = value("test_acc");
  record.evaluated = true;
  double eval_ms = watch.milliseconds();
  comm_.allreduce_max(&eval_ms, 1);
  record.eval_ms = eval_ms;
}

// Best-valid tracking (workloads that report valid_acc; by valid_loss, those that report it too); returns whether
// early stopping says stop.
bool Trainer::track_best(const EpochRecord& record, TrainResult& result, Progress& progress) {
  if (record.metrics.count("valid_acc") == 0) return false;
  const auto loss = record.metrics.find("valid_loss");
  const bool by_loss = config_.best_by_loss && loss != record.metrics.end();
  // (best_valid_loss 0: none yet, or a checkpoint written before --best-by)
  const bool better = by_loss ? (result.best_valid_loss <= 0 || loss->second < result.best_valid_loss)
                              : record.valid_acc > result.best_valid_acc;
  if (better) {
    result.best_valid_acc = record.valid_acc;
    result.best_valid_loss = by_loss ? loss->second : 0.0;
    result.best_epoch = record.epoch;
    result.test_acc_at_best = record.test_acc;
    result.train_acc_at_best = record.train_acc;
    progress.evals_since_best = 0;
    return false;
  }
  ++progress.evals_since_best;
  return config_.patience > 0 && progress.evals_since_best >= config_.patience;
}

void Trainer::finish(TrainResult& result, double trained_ms, double exposed_ms, int64_t trained_epochs) {
  const Device device = workload_->device();
  double peak = static_cast<double>(detail::window_peak_bytes(device));
  comm_.allreduce_max(&peak, 1);
  result.allocated_bytes = static_cast<int64_t>(peak);
  log::info(strformat("memory: peak %.1f MiB of %s buffers per rank over the run (max over ranks)", mib(peak),
                      device_name(device)));
  if (result.allocated_bytes > result.bytes_before_training)
    log::info(strformat("warning: buffers grew during training, by %.1f MiB",
                        mib(static_cast<double>(result.allocated_bytes - result.bytes_before_training))));
  if (trained_epochs > 0) result.mean_epoch_ms = trained_ms / static_cast<double>(trained_epochs);
  if (trained_ms > 0) {
    result.exposed_comm_share = exposed_ms / trained_ms;
    const double snapshots = static_cast<double>(workload_->snapshots_per_epoch() * trained_epochs);
    result.snapshots_per_s = 1e3 * snapshots / trained_ms;
  }
  if (result.best_valid_acc < 0) result.best_valid_acc = 0;
  if (!result.epochs.empty()) result.final_metrics = result.epochs.back().metrics;
  run_collectively(comm_, [&] { if (metrics_) metrics_->final(result, *workload_, comm_.size()); },
                   Report::lowest_failing_rank);
}

// The metrics file (with its header) and the TensorBoard events, on rank 0; a failure stops every rank.
void Trainer::lock_outputs() {
  run_collectively(
      comm_,
      [&] {
        if (comm_.rank() != 0) return;  // rank 0 writes every output of a run
        std::vector<std::string> outputs;
        if (!config_.checkpoint_dir.empty()) {
          outputs.push_back(last_checkpoint_path(config_.checkpoint_dir));
          outputs.push_back(best_checkpoint_path(config_.checkpoint_dir));
        }
        if (!config_.metrics_path.empty()) outputs.push_back(config_.metrics_path);
        for (const std::string& output : outputs)
          output_locks_.push_back(std::make_unique<io::OutputLock>(output, /*create_parent=*/true));
      },
      Report::lowest_failing_rank);
}

void Trainer::open_outputs(int64_t first_epoch) {
  const std::vector<std::string> hosts = gather_host_names(comm_);  // collective: before rank 0 goes alone
  Metrics memory_plan = workload_->memory_plan();  // the same names on every rank (one model)
  {
    std::vector<double> bytes;
    for (const auto& item : memory_plan) bytes.push_back(item.second);
    if (!bytes.empty()) comm_.allreduce_max(bytes.data(), static_cast<int>(bytes.size()));
    size_t i = 0;
    for (auto& item : memory_plan) item.second = bytes[i++];
  }
  run_collectively(
      comm_,
      [&] {
        if (comm_.rank() != 0) return;
        // A new run in a used checkpoint directory: an earlier run's best.h5 would be taken for this run's
        // (predict prefers best.h5), so it goes; last.h5 is replaced by this run's first checkpoint.
        if (!config_.resume && !config_.checkpoint_dir.empty()) {
          const std::string best = best_checkpoint_path(config_.checkpoint_dir);
          std::error_code error;
          if (std::filesystem::exists(best, error)) {
            std::filesystem::remove(best);  // filesystem_error (one line naming it) if it cannot go
            log::info(strformat("removed %s of an earlier run (a new run; %s)", best.c_str(),
                                config_.save_best ? "--save-best writes this run's" : "no --save-best"));
          }
        }
        if (!config_.metrics_path.empty()) {
          metrics_ =
              std::make_unique<MetricsWriter>(config_.metrics_path, config_.resume ? first_epoch - 1 : 0);
          if (!metrics_->has_header()) {
            RunHeader header;
            header.config_json = config_.config_json;
            header.hosts = hosts;
            header.ranks = comm_.size();
            header.device = device_name(workload_->device());
            header.resumed_after_epoch = config_.resume ? first_epoch - 1 : 0;
            header.memory_plan = memory_plan;
            metrics_->header(header);
          }
        }
        if (!config_.tensorboard_dir.empty())
          tensorboard_ = std::make_unique<TensorBoardWriter>(config_.tensorboard_dir);
      },
      Report::lowest_failing_rank);
}

// Scalars by name at step = epoch: the loss every epoch; evaluation figures and the epoch time when
// evaluated.
void Trainer::write_tensorboard(const EpochRecord& record) {
  std::vector<std::pair<std::string, double>> values{{"loss", record.loss}, {"epoch_ms", record.epoch_ms}};
  if (record.evaluated)
    for (const auto& [name, value] : record.metrics) values.emplace_back(name, value);
  tensorboard_->scalars(record.epoch, values);
}

TrainResult Trainer::run() {
  TrainResult result;
  result.best_valid_acc = -1;
  Progress progress;
  interrupt::set_phase("preparing training");
  lock_outputs();
  const int64_t first_epoch = restore(result, progress);
  open_outputs(first_epoch);
  workload_->warm_up(first_epoch);
  warm_up_communicator();
  report_memory_before_training(result);
  result.baselines = workload_->baselines();
  if (!result.baselines.empty()) log::info("baselines:" + metrics_text(result.baselines));
  if (!config_.trace_path.empty()) {
    trace_ = std::make_unique<nn::TraceRecorder>(kTraceSpansPerRank);
    run_collectively(comm_, [&] {
      HALOGEN_USER_CHECK(workload_->clock().set_trace(trace_.get()),
                         "--trace records host wall-clock spans of the CPU kernels; with --device cuda use Nsight "
                         "Systems (the NVTX ranges name the same phases)");
      if (comm_.rank() == 0) io::AtomicOutput check(config_.trace_path);  // UserError: no such directory
    }, Report::lowest_failing_rank);
    comm_.barrier();  // the common origin of every rank's spans
    trace_origin_s_ = wall_seconds();
  }

  double trained_ms = 0, exposed_ms = 0;
  int64_t trained_epochs = 0;
  const int64_t kill_epoch = kill_at_epoch();
  // Periodic progress where nobody sees the epoch lines scroll by (a batch job's log).
  const bool periodic_progress =
      config_.progress_every_s > 0 && comm_.rank() == 0 && !stdout_reaches_terminal();
  const Stopwatch run_watch;
  double last_progress_s = 0;
  interrupt::set_phase("training");
  for (int64_t epoch = first_epoch; epoch <= config_.epochs; ++epoch) {
    interrupt::set_epoch(epoch);  // "interrupted by SIGTERM during training, epoch 12"
    if (epoch == kill_epoch && comm_.rank() == 0) std::raise(SIGKILL);
    EpochRecord record;
    if (trace_) trace_->set_epoch(epoch);
    train_epoch(epoch, record);
    trained_ms += record.epoch_ms;
    exposed_ms += record.halo_exposed_ms + record.allreduce_exposed_ms;
    ++trained_epochs;
    bool stop = false;
    if (epoch % config_.eval_every == 0 || epoch == config_.epochs) {
      evaluate(record);
      const int64_t best_before = result.best_epoch;
      stop = track_best(record, result, progress);
      if (config_.save_best && !config_.checkpoint_dir.empty() && result.best_epoch != best_before)
        save_checkpoint(best_checkpoint_path(config_.checkpoint_dir), epoch, result, progress);
      if (config_.print_epochs) log::info(epoch_line(record, config_.epochs));
      run_collectively(comm_, [&] { if (metrics_) metrics_->epoch(record, *workload_); },
                       Report::lowest_failing_rank);
    }
    if (!config_.tensorboard_dir.empty())  // the same on every rank: the collective is entered by all
      run_collectively(
          comm_,
          [&] {
            if (tensorboard_) write_tensorboard(record);
          },
          Report::lowest_failing_rank);
    if (periodic_progress && run_watch.seconds() - last_progress_s >= config_.progress_every_s) {
      last_progress_s = run_watch.seconds();
      const double per_epoch = last_progress_s / static_cast<double>(epoch - first_epoch + 1);
      log::info(strformat("progress: epoch %lld/%lld | loss %.4f | elapsed %s | ETA %s", (long long)epoch,
                          (long long)config_.epochs, record.loss, duration_text(last_progress_s).c_str(),
                          duration_text(per_epoch * static_cast<double>(config_.epochs - epoch)).c_str()));
    }
    result.epochs.push_back(record);
    result.last_epoch = epoch;
    const bool last = stop || epoch == config_.epochs;
    if (!config_.checkpoint_dir.empty() &&
        (last || (config_.checkpoint_every > 0 && epoch % config_.checkpoint_every == 0)))
      save_checkpoint(last_checkpoint_path(config_.checkpoint_dir), epoch, result, progress);
    if (stop) {
      result.stopped_early = true;
      log::info(strformat("early stop after epoch %lld: no better valid accuracy for %lld evaluations",
                          (long long)epoch, (long long)config_.patience));
      break;
    }
  }
  interrupt::set_epoch(-1);
  interrupt::set_phase("finishing training");
  if (trace_) {
    workload_->clock().set_trace(nullptr);
    write_trace(comm_, *trace_, trace_origin_s_, config_.trace_path);
    log::info(strformat("wrote trace %s: %zu spans on rank 0 (open it in https://ui.perfetto.dev)",
                        config_.trace_path.c_str(), trace_->spans().size()));
  }
  finish(result, trained_ms, exposed_ms, trained_epochs);
  return result;
}

}  // namespace halogen::train
