// `halogen train DIR`: full-batch GNN training on a partition directory, one MPI rank per part
// (mpirun -np P halogen train DIR ...). MPI is initialised here (comm::MpiSession).
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/rank_device.h"
#include "comm/mpi_comm.h"
#include "comm/mpi_session.h"
#include "comm/watchdog.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/part_file.h"
#include "kernels/device.h"
#include "nn/temporal_registry.h"
#include "train/checkpoint.h"
#include "train/collective_error.h"
#include "train/load.h"
#include "train/memory_estimate.h"
#include "train/metrics.h"
#include "train/temporal_workload.h"
#include "train/trainer.h"

namespace halogen::app {
namespace {

// The model options (--model, --layers, --hidden, --dropout, --edge-weight, --recompute and each model's own)
// are ModelFlags' (apps/model_options.h).
struct TrainFlags : ModelFlags {
  std::string dir;
  int64_t epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  bool weight_decay_all_layers = false;
  uint64_t seed = 0;
  bool row_normalize = false;
  int64_t eval_every = 1;
  int64_t patience = 0;
  int threads = 0;
  double comm_timeout = 0;  // --comm-timeout; 0: HALOGEN_COMM_TIMEOUT or the default
  std::string metrics;
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  bool resume = false;
  bool save_best = false;
  bool allow_lr_change = false;
  bool no_overlap = false;
  std::string device;  // cpu | cuda; empty: cuda when every rank sees a usable GPU (CUDA builds), else cpu
  std::string comm;    // auto | nccl | mpi (device cuda only); empty: auto
  bool tf32 = false;   // --device cuda: allow TF32 tensor cores in GEMMs
  bool quiet = false;
  bool ignore_memory_check = false;
  // temporal models (evolvegcn-o, tgcn, gconvgru)
  std::string task = "regression";
  int64_t window = 0;
  int64_t lags = 4;
  double train_fraction = 0.9;
  std::string target_scaling = "per-node";
  float clip_grad_norm = 0.0f;  // given or not: clip_given (temporal models have a per-model default)
  int64_t negatives = 1;  // given or not: negatives_given
  int cheb_k = 2;
  int64_t embedding = 0;
  // run reports (issue 16): periodic progress in logs, TensorBoard events
  double progress_every = 30;
  std::string tensorboard;
  std::string trace;
  bool hidden_given = false, epochs_given = false, weight_decay_given = false, eval_every_given = false,
       layers_given = false, negatives_given = false, window_given = false, clip_given = false, lr_given = false,
       patience_given = false, best_by_given = false;
  std::string best_by = "acc";  // --best-by acc | loss
  std::vector<std::string> unused_options;  // given, but not used by --model (a warning)
};

constexpr const char* kTemporalDefaultsHelp =
    "temporal models: 50 epochs, hidden 32, 1 layer, weight decay 0, eval every 10; evolvegcn-o --task "
    "regression: 15 windows per epoch";

bool is_temporal(const std::string& model) { return is_temporal_model(model); }

// The options every model shares.
void set_run_config(const TrainFlags& flags, train::RunConfig& config) {
  config.epochs = flags.epochs;
  config.lr = flags.lr;
  config.clip_grad_norm = flags.clip_grad_norm;
  config.eval_every = flags.eval_every;
  config.patience = flags.patience;
  config.metrics_path = flags.metrics;
  config.checkpoint_dir = flags.checkpoint;
  config.checkpoint_every = flags.checkpoint_every;
  config.resume = flags.resume;
  config.save_best = flags.save_best;
  config.allow_lr_change = flags.allow_lr_change;
  config.print_epochs = !flags.quiet;
  config.progress_every_s = flags.progress_every;
  config.tensorboard_dir = flags.tensorboard;
  config.trace_path = flags.trace;
}

// A float option as the user would write it (0.01, not 0.009999999776).
double option_value(float value) {
  return std::stod(strformat("%g", value));
}

// The resolved configuration of a run (every option by name, with per-model defaults applied), recorded in
// the metrics header: it can be given back as a --config file.
std::string resolved_config_json(const TrainFlags& flags, const train::RunConfig& run,
                                 const std::string& device) {
  nlohmann::json j = {{"dir", flags.dir},
                      {"model", flags.model},
                      {"epochs", run.epochs},
                      {"lr", option_value(run.lr)},
                      {"weight-decay", option_value(run.weight_decay)},
                      {"weight-decay-all-layers", run.weight_decay_all_layers},
                      {"clip-grad-norm", option_value(run.clip_grad_norm)},
                      {"seed", flags.seed},
                      {"eval-every", run.eval_every},
                      {"patience", run.patience},
                      {"best-by", run.best_by_loss ? "loss" : "acc"},
                      {"threads", omp_get_max_threads()},
                      {"metrics", flags.metrics},
                      {"checkpoint", flags.checkpoint},
                      {"checkpoint-every", flags.checkpoint_every},
                      {"resume", flags.resume},
                      {"no-overlap", flags.no_overlap},
                      {"recompute", flags.recompute},
                      {"precision", flags.precision},
                      {"device", device},
                      {"quiet", flags.quiet},
                      {"progress-every", flags.progress_every},
                      {"tensorboard", flags.tensorboard},
                      {"trace", flags.trace},
                      {"save-best", flags.save_best},
                      {"allow-lr-change", flags.allow_lr_change}};
  j["comm"] = flags.comm.empty() ? "auto" : flags.comm;
  j["tf32"] = flags.tf32;
  j["comm-timeout"] = comm::comm_timeout_seconds();
  j["ignore-memory-check"] = flags.ignore_memory_check;
  if (is_temporal(flags.model)) {
    const auto& temporal = static_cast<const train::TemporalTrainConfig&>(run);
    j["task"] = flags.task;
    j["hidden"] = temporal.model.hidden;
    j["layers"] = temporal.model.layers;
    j["window"] = temporal.window;
    if (temporal.window == 0 && temporal.windows_per_epoch > 1)
      j["windows-per-epoch"] = temporal.windows_per_epoch;
    j["lags"] = flags.lags;
    j["train-fraction"] = flags.train_fraction;
    if (flags.task == "regression") j["target-scaling"] = flags.target_scaling;
    j["negatives"] = temporal.task.negatives;
    j["cheb-k"] = flags.cheb_k;
    j["embedding"] = flags.embedding;
  } else {
    j["layers"] = flags.layers;
    j["hidden"] = flags.hidden;
    j["dropout"] = option_value(flags.dropout);
    j["row-normalize"] = flags.row_normalize;
    j["edge-weight"] = flags.edge_weight;
    const nn::ModelConfig model = model_config(flags);
    for (const nn::ModelOption& option : nn::model_spec(flags.model).options) {
      const nn::OptionValue value = option.get(model);
      if (const auto* f = std::get_if<float>(&value)) j[option.name] = option_value(*f);
      else std::visit([&](const auto& v) { j[option.name] = v; }, value);
    }
  }
  return j.dump();
}

// --metrics never replaces an input: the graph file, the partition's meta.json, assignment or a shard (a path
// that does not exist yet never matches); nor this run's checkpoint files or directory, nor a lock file.
void refuse_outputs_over_inputs(comm::Communicator& comm, const TrainFlags& flags, const io::PartitionMeta& meta) {
  if (flags.metrics.empty()) return;
  train::run_collectively(comm, [&] {
    std::vector<std::string> inputs = {meta.graph_file, flags.dir + "/meta.json", io::assignment_path(flags.dir)};
    for (int part = 0; part < meta.num_parts; ++part) inputs.push_back(io::shard_path(flags.dir, part));
    for (const std::string& input : inputs) io::refuse_output_equal_to_input(flags.metrics, input, "--metrics");
    // Nor one of this run's own outputs, existing or not: a checkpoint's rename would replace the metrics.
    if (!flags.checkpoint.empty()) {
      namespace fs = std::filesystem;
      std::error_code error;
      const fs::path metrics = fs::weakly_canonical(flags.metrics, error);
      for (const std::string& own : {train::last_checkpoint_path(flags.checkpoint),
                                     train::best_checkpoint_path(flags.checkpoint), flags.checkpoint}) {
        std::error_code own_error;
        HALOGEN_USER_CHECK(error || metrics != fs::weakly_canonical(own, own_error) || own_error,
                           "--metrics %s is %s, an output of --checkpoint %s: writing both would destroy the metrics "
                           "(choose another file)",
                           flags.metrics.c_str(), own.c_str(), flags.checkpoint.c_str());
      }
    }
    HALOGEN_USER_CHECK(!io::is_lock_file_name(std::filesystem::path(flags.metrics).filename().string()),
                       "--metrics %s is a lock file of halogen (choose another file)", flags.metrics.c_str());
  }, train::Report::lowest_failing_rank);
}

// What checkpoints record about the input (train/checkpoint.h): the graph file's checksum (--resume refuses
// another graph) and the partition (recorded; another partition of the same graph may resume). Rank 0 writes
// checkpoints, so only rank 0 hashes the assignment file.
void set_checkpoint_identity(const comm::Communicator& comm, const TrainFlags& flags, const io::PartitionMeta& meta,
                             train::RunConfig& config) {
  config.graph_checksum = meta.graph_checksum;
  if (flags.checkpoint.empty() || comm.rank() != 0) return;
  train::RunOptions partition;
  train::add_option(partition, "parts", meta.num_parts);
  train::add_option(partition, "method", meta.method);
  std::error_code error;
  const std::string assignment = io::assignment_path(flags.dir);
  if (std::filesystem::exists(assignment, error)) train::add_option(partition, "assignment", io::file_checksum(assignment));
  train::add_option(partition, "dir", flags.dir);
  config.partition = train::options_json(partition);
}

train::TemporalTrainConfig temporal_config(const TrainFlags& flags) {
  train::TemporalTrainConfig config;  // temporal defaults: 100 epochs, weight decay 0 on every layer, eval every 10
  set_run_config(flags, config);
  // The model's defaults for options not given (nn/temporal_registry.h).
  const nn::TemporalTrainingDefaults& defaults = nn::temporal_spec(flags.model).defaults;
  config.epochs = flags.epochs_given ? flags.epochs : defaults.epochs;
  config.lr = flags.lr_given ? flags.lr : defaults.lr;
  config.clip_grad_norm = flags.clip_given ? flags.clip_grad_norm : defaults.clip_grad_norm;
  config.weight_decay = flags.weight_decay_given ? flags.weight_decay : 0.0f;
  config.eval_every = flags.eval_every_given ? flags.eval_every : 10;
  config.model.kind = nn::parse_temporal_kind(flags.model);
  config.model.hidden = flags.hidden_given ? flags.hidden : 32;
  config.model.layers = flags.layers_given ? flags.layers : 1;
  config.model.cheb_k = flags.cheb_k;
  config.model.seed = flags.seed;
  config.task.kind = train::parse_task_kind(flags.task);
  config.task.lags = flags.lags;
  config.task.train_fraction = flags.train_fraction;
  config.task.scaling = train::parse_target_scaling(flags.target_scaling);
  config.task.negatives = flags.negatives_given ? flags.negatives : 0;  // 0: the partition's link_negatives
  config.task.seed = flags.seed;
  config.task.source = flags.dir;
  config.embedding = flags.embedding;
  config.window = flags.window;
  if (!flags.window_given && config.task.kind == train::TaskKind::regression)
    config.windows_per_epoch = defaults.windows_per_epoch;
  config.overlap = !flags.no_overlap;
  return config;
}

// `halogen train --model evolvegcn-o|tgcn|gconvgru`: a dynamic graph's snapshot sequence, through the same
// epoch runner as the static models (train/trainer.h) with a TemporalWorkload.
void run_temporal(comm::Communicator& comm, const TrainFlags& flags, Device device, int ranks_on_node) {
  interrupt::set_phase("reading " + flags.dir);
  train::RankInput input = train::load_rank_input(comm, flags.dir, false);
  const io::PartitionMeta& meta = input.meta;
  train::TemporalTrainConfig config = temporal_config(flags);
  config.device = device;
  // The checks every rank meets alike, before anything collective: one line for the job, not one per rank.
  train::run_collectively(
      comm, [&] { train::check_temporal_setup(input.shard, config.task, config.window, config.model); },
      train::Report::lowest_failing_rank);
  // Memory planned before the workload allocates it (an upper bound: train/memory_estimate.h).
  interrupt::set_phase("planning memory");
  const graph::Shard& shard = input.shard;
  const int64_t steps = std::max<int64_t>(1, static_cast<int64_t>(shard.snapshots.size()));
  train::TemporalShape shape;
  const bool regression = config.task.kind == train::TaskKind::regression;
  shape.in = regression ? config.task.lags : shard.num_features;
  shape.out = regression                                  ? 1
              : config.task.kind == train::TaskKind::node ? std::max<int64_t>(shard.num_classes, 1)
              : config.embedding > 0                      ? config.embedding
                                                          : config.model.hidden;
  shape.window = config.window > 0 ? std::min(config.window, steps)
                 : config.windows_per_epoch > 1 ? (steps + config.windows_per_epoch - 1) / config.windows_per_epoch
                                                : steps;
  if (!flags.ignore_memory_check) {
    train::run_collectively(
        comm,
        [&] { train::check_temporal_rank_memory_fits(config.model, shard, shape, ranks_on_node, device); },
        train::Report::lowest_failing_rank);
    double bound = static_cast<double>(train::estimate_temporal_rank_memory(config.model, shard, shape, device));
    comm.allreduce_max(&bound, 1);
    log::info(strformat("memory: at most %.3f MiB per rank planned (upper bound; --ignore-memory-check skips the "
                        "check)", bound / 1048576.0));
  } else {
    note_memory_check_skipped("--ignore-memory-check",
                              train::estimate_temporal_rank_memory(config.model, shard, shape, device));
  }
  refuse_outputs_over_inputs(comm, flags, meta);
  set_checkpoint_identity(comm, flags, meta, config);
  config.config_json = resolved_config_json(flags, config, device_name(device));
  log::info(strformat("graph %s: %lld nodes, %zu snapshots | %d ranks (%s) | %d threads per rank | device %s",
                      meta.graph_name.c_str(), (long long)meta.num_nodes, input.shard.snapshots.size(), comm.size(),
                      meta.method.c_str(), omp_get_max_threads(), device_name(device)));
  interrupt::set_phase("building the model");
  train::Trainer trainer(comm, input.shard, config);
  auto& workload = static_cast<train::TemporalWorkload&>(trainer.workload());
  const nn::TemporalModelConfig& model = workload.setup().model;
  log::info(strformat("model %s (hidden %lld%s) | task %s: %lld training steps, %lld test steps, window %lld | adam "
                      "lr %g, weight decay %g | %lld epochs, seed %llu",
                      flags.model.c_str(), (long long)model.hidden,
                      nn::temporal_spec(model.kind).summary(model).c_str(),
                      flags.task.c_str(), (long long)workload.task().train_steps(),
                      (long long)(workload.task().num_steps() - workload.task().train_steps()),
                      (long long)workload.window(), config.lr, config.weight_decay, (long long)config.epochs,
                      (unsigned long long)flags.seed));
  input.shard = graph::Shard{};
  const train::TrainResult result = trainer.run();
  std::string figures = train::metrics_text(result.final_metrics) + train::metrics_text(result.baselines);
  log::info(strformat("done:%s | mean epoch %.2f ms, %.1f snapshots/s, exposed communication %.1f%%", figures.c_str(),
                      result.mean_epoch_ms, result.snapshots_per_s, 100.0 * result.exposed_comm_share));
}

// The model's own options and --edge-weight for the model line ("" for gcn/sage without weights).
std::string model_extras(const TrainFlags& flags, const nn::ModelConfig& model) {
  std::string text = nn::model_summary(model);
  if (flags.edge_weight) text += ", edge weights";
  return text;
}

// --edge-weight on a graph without /csr/weight (or with negative weights): one message for the job, from rank 0.
// A part with no edges carries no weights even in a weighted graph, so only parts with edges decide.
void check_edge_weights(comm::Communicator& comm, const graph::Shard& shard, const std::string& dir) {
  double bad[2] = {shard.nnz() > 0 && shard.weight.empty() ? 1.0 : 0.0, 0.0};
  for (float w : shard.weight) bad[1] = std::max(bad[1], w < 0.0f ? 1.0 : 0.0);
  comm.allreduce_max(bad, 2);
  if (bad[0] == 0.0 && bad[1] == 0.0) return;
  if (comm.rank() != 0) throw train::PeerFailed();
  if (bad[0] != 0.0)
    throw UserError(strformat("--edge-weight: %s: the graph has no edge weights (no /csr/weight in its parts; "
                              "`halogen info GRAPH.h5` shows whether a graph file has them)", dir.c_str()));
  throw UserError(strformat("--edge-weight: %s: the graph has negative edge weights; the GCN, SAGE-mean and APPNP "
                            "normalisations need weights >= 0", dir.c_str()));
}

void run_train(const TrainFlags& flags) {
  check_device_flags_before_mpi(flags.device, flags.comm);
  set_host_prefault(true);  // the trainer's buffers are resident before epoch 1 (core/buffer.h)
  // Checks of the flags alone, before MPI: every rank meets them alike, and main prints them once (rank 0).
  HALOGEN_USER_CHECK(is_temporal(flags.model) || flags.task == "node" || flags.task == "regression",
                     "--task %s needs a temporal model (--model evolvegcn-o|tgcn|gconvgru)", flags.task.c_str());
  HALOGEN_USER_CHECK(!flags.resume || !flags.checkpoint.empty(), "--resume needs --checkpoint DIR");
  HALOGEN_USER_CHECK(!is_temporal(flags.model) || flags.precision == "fp32",
                     "--precision %s: the temporal models (--model %s) run in FP32 only", flags.precision.c_str(),
                     flags.model.c_str());
  HALOGEN_USER_CHECK(!flags.save_best || !flags.checkpoint.empty(), "--save-best needs --checkpoint DIR");
  HALOGEN_USER_CHECK(flags.checkpoint_every == 0 || !flags.checkpoint.empty(),
                     "--checkpoint-every needs --checkpoint DIR (where the checkpoints go)");
  int argc = 0;
  char** argv = nullptr;
  comm::MpiSession session(&argc, &argv);
  // SIGTERM/SIGINT/SIGHUP: temporaries and locks removed, one line naming the phase, exit 128 + signal. Made
  // before the communicator, whose handler (several ranks) hands the signal on to it.
  const interrupt::Guard guard("train");
  if (flags.comm_timeout > 0) comm::set_comm_timeout_seconds(flags.comm_timeout);
  for (const std::string& option : flags.unused_options) log::warn(option);
  set_rank_threads(flags.threads, session);
  Device device = Device::cpu;
  std::unique_ptr<comm::Communicator> rank_comm = make_rank_comm(flags.device, flags.comm, session, device);
  comm::Communicator& comm = *rank_comm;
  run_rank_job(rank_comm, [&] {
    HALOGEN_USER_CHECK(!flags.tf32 || device == Device::cuda, "--tf32 needs --device cuda");
    if (flags.tf32) kernels::device::set_gemm_tf32(true);
    if (is_temporal(flags.model)) {
      // --task link runs on the CPU only (train/temporal_workload.h): without an explicit --device, use it.
      if (device != Device::cpu && flags.device.empty() && flags.task == "link")
        rank_comm = make_rank_comm("cpu", "", session, device);
      run_temporal(*rank_comm, flags, device, session.local_size());
      return;
    }
    HALOGEN_USER_CHECK(flags.task == "node" || flags.task == "regression",
                       "--task %s needs a temporal model (--model evolvegcn-o|tgcn|gconvgru)", flags.task.c_str());
    train::TrainConfig config;
    set_run_config(flags, config);
    config.model = model_config(flags);
    const nn::ModelSpec& spec = nn::model_spec(config.model);
    config.model.seed = flags.seed;
    config.model.overlap = !flags.no_overlap;
    // The model's training defaults where the option was not given (nn/model_registry.h, TrainingDefaults).
    if (!flags.lr_given && spec.defaults.lr) config.lr = *spec.defaults.lr;
    if (!flags.epochs_given && spec.defaults.epochs) config.epochs = *spec.defaults.epochs;
    if (!flags.patience_given && spec.defaults.patience) config.patience = *spec.defaults.patience;
    config.best_by_loss = (!flags.best_by_given && spec.defaults.best_by ? *spec.defaults.best_by : flags.best_by) == "loss";
    config.weight_decay = !flags.weight_decay_given && spec.defaults.weight_decay ? *spec.defaults.weight_decay
                                                                                 : flags.weight_decay;
    config.weight_decay_all_layers = flags.weight_decay_all_layers;
    config.device = device;
    config.config_json = resolved_config_json(flags, config, device_name(device));
    HALOGEN_USER_CHECK(!flags.resume || !flags.checkpoint.empty(), "--resume needs --checkpoint DIR");

    interrupt::set_phase("reading " + flags.dir);
    train::RankInput input = train::load_rank_input(comm, flags.dir, flags.row_normalize);
    const io::PartitionMeta& meta = input.meta;
    refuse_outputs_over_inputs(comm, flags, meta);
    set_checkpoint_identity(comm, flags, meta, config);
    train::add_option(config.preprocessing, "row_normalize", flags.row_normalize);
    if (flags.edge_weight) check_edge_weights(comm, input.shard, flags.dir);
    // Memory is planned before the model allocates it (the host's, or on --device cuda the rank's GPU's).
    interrupt::set_phase("planning memory");
    if (!flags.ignore_memory_check) {
      train::run_collectively(
          comm, [&] { train::check_rank_memory_fits(config.model, input.shard, session.local_size(), device); },
          train::Report::lowest_failing_rank);
    } else {
      nn::RankShape shape = train::shard_rank_shape(input.shard);
      shape.device = device;
      note_memory_check_skipped("--ignore-memory-check", train::estimate_rank_memory(config.model, shape));
    }
    int64_t sizes[4] = {input.shard.num_owned(), input.shard.num_halo(), input.shard.nnz(),
                        static_cast<int64_t>(input.shard.plan.send_idx.size())};
    double extremes[2] = {static_cast<double>(sizes[0]), -static_cast<double>(sizes[0])};
    comm.allreduce_max(extremes, 2);
    comm.allreduce_sum(sizes, 4);
    log::info(strformat("graph %s: %lld nodes, %lld edges, %lld features, %d classes | %d ranks (%s), owned "
                        "%lld..%lld per rank, halo rows %lld in total | %d threads per rank",
                        meta.graph_name.c_str(), (long long)meta.num_nodes, (long long)meta.num_edges,
                        (long long)meta.num_features, meta.num_classes, comm.size(), meta.method.c_str(),
                        (long long)-extremes[1], (long long)extremes[0], (long long)sizes[1], omp_get_max_threads()));
    log::info(strformat("model %s: %d layers, hidden %lld%s, dropout %g | adam lr %g, weight decay %g (%s) | %lld "
                        "epochs, seed %llu, overlap %s%s | device %s",
                        flags.model.c_str(), flags.layers, (long long)flags.hidden,
                        model_extras(flags, config.model).c_str(), flags.dropout, config.lr, config.weight_decay,
                        flags.weight_decay_all_layers ? "all layers" : spec.weight_decay_scope.c_str(),
                        (long long)config.epochs, (unsigned long long)flags.seed, flags.no_overlap ? "off" : "on",
                        flags.row_normalize ? ", row-normalised features" : "", device_name(device)));

    interrupt::set_phase("building the model");
    train::Trainer trainer(comm, std::move(input.shard), config);  // emptied as the model copies it
    input.shard = graph::Shard{};  // the model holds its own copies
    const train::TrainResult result = trainer.run();
    // (By --best-by loss: the epoch of the lowest validation loss, which the line names too.)
    const std::string by_loss =
        config.best_by_loss ? strformat(" (lowest valid loss %.4f)", result.best_valid_loss) : std::string();
    log::info(strformat("done: best valid %.4f at epoch %lld%s, test %.4f there | mean epoch %.2f ms%s",
                        result.best_valid_acc, (long long)result.best_epoch, by_loss.c_str(), result.test_acc_at_best,
                        result.mean_epoch_ms, result.stopped_early ? " | stopped early" : ""));
  });
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a GNN on a partition directory (run under mpirun/srun, one rank per part)");
  cmd->add_option("dir", flags->dir, "Partition directory made by `halogen partition`")->required();
  add_model_options(cmd, *flags);
  cmd->add_option(
         "--epochs", flags->epochs,
         "Training epochs (full-batch steps; temporal models: 50)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--lr", flags->lr, "Adam learning rate, > 0")
      ->check(finite_number(0.0, false))
      ->capture_default_str();
  cmd->add_option("--clip-grad-norm", flags->clip_grad_norm,
                  "Scale the gradients to at most this global L2 norm before each update (torch's "
                  "clip_grad_norm_); 0: off (the default, except temporal models: 1)")
      ->check(finite_number(0.0, true));
  cmd->add_option("--weight-decay", flags->weight_decay,
                  "L2 weight decay on the FIRST layer's parameters (Kipf & Welling), >= 0; see "
                  "--weight-decay-all-layers (temporal models: 0, on every layer)")
      ->check(finite_number(0.0, true))->capture_default_str();
  cmd->add_flag("--weight-decay-all-layers", flags->weight_decay_all_layers, "Apply --weight-decay to every layer");
  cmd->add_option("--seed", flags->seed, "Seed of weight init and dropout (results do not depend on the rank count)")
      ->check(seed_value())->capture_default_str();
  cmd->add_flag("--row-normalize", flags->row_normalize, "Divide each feature row by its sum (Kipf & Welling)");
  cmd->add_option("--eval-every", flags->eval_every,
                  "Evaluate train/valid/test accuracy every N epochs (temporal models: 10)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--best-by", flags->best_by,
                  "The best epoch (its test accuracy is reported, --save-best keeps it, --patience counts from it): "
                  "acc (highest validation accuracy) or loss (lowest validation loss; gcnii's default, as its "
                  "reference)")
      ->check(CLI::IsMember({"acc", "loss"}))->capture_default_str();
  cmd->add_option("--patience", flags->patience, "Stop after N evaluations without a better best epoch (--best-by; 0: off)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--threads", flags->threads,
                  "OpenMP threads per rank (default: OMP_NUM_THREADS, else the node's cores / ranks on the node; "
                  "more than the node's cores are clamped to them with a warning)")
      ->check(non_negative());
  cmd->add_option("--metrics", flags->metrics, "Write JSON lines: one object per evaluated epoch, then a final one");
  cmd->add_option("--checkpoint", flags->checkpoint,
                  "Checkpoint directory: DIR/last.h5 (HDF5, written atomically; docs/train.md has the layout)");
  cmd->add_option("--checkpoint-every", flags->checkpoint_every, "Epochs between checkpoints (0: only at the end)")
      ->check(non_negative())->capture_default_str();
  cmd->add_flag("--resume", flags->resume,
                "Continue from --checkpoint DIR exactly where it stopped (same graph and options; only --epochs, "
                "--metrics, --quiet, --eval-every, --patience and --checkpoint-every may change)");
  cmd->add_flag("--save-best", flags->save_best,
                "Also keep DIR/best.h5: the model of the best validation accuracy (needs --checkpoint DIR)");
  cmd->add_flag("--allow-lr-change", flags->allow_lr_change, "With --resume: continue with a changed --lr");
  cmd->add_option("--comm-timeout", flags->comm_timeout,
                  "Seconds a rank waits for one communication (halo exchange, allreduce) before it ends the job, "
                  "naming the peer (default: HALOGEN_COMM_TIMEOUT, else 600)")
      ->check(finite_number(0.0, false));
  cmd->add_flag("--no-overlap", flags->no_overlap, "Wait for halo exchanges before the local product (comparison)");
  cmd->add_option("--device", flags->device,
                  "cpu or cuda (default: cuda when the build has the CUDA backend and every rank sees a GPU, else cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--comm", flags->comm,
                  "With --device cuda: auto (default: nccl when every rank has its own GPU, else mpi), nccl (one "
                  "GPU per rank) or mpi (host-staged over MPI; ranks may share a GPU)")
      ->check(CLI::IsMember({"auto", "nccl", "mpi"}));
  cmd->add_flag("--tf32", flags->tf32,
                "With --device cuda: let GEMMs use TF32 tensor cores (10-bit mantissa inputs; faster, ~1e-3 "
                "relative error per product). Default: full FP32");
  cmd->add_flag("--quiet", flags->quiet, "Do not print one line per evaluated epoch");
  cmd->add_flag("--ignore-memory-check", flags->ignore_memory_check,
                "Train even when the predicted per-rank memory (as `halogen info DIR` computes it) times the ranks "
                "on a node exceeds the memory available (MemAvailable or the cgroup limit)");
  cmd->add_option("--task", flags->task,
                  "Temporal models: regression (node series, lags as features), link (predict snapshot t+1's edges) "
                  "or node (classes)")
      ->check(CLI::IsMember({"regression", "link", "node"}))->capture_default_str();
  cmd->add_option(
         "--window", flags->window,
         "Temporal models: steps per BPTT window (truncated between windows); 0 = the whole training span, "
         "except evolvegcn-o with --task regression: 15 windows per epoch (ceil(training steps / 15))")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--lags", flags->lags, "Temporal regression: past values per input row")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))->capture_default_str();
  cmd->add_option("--target-scaling", flags->target_scaling,
                  "Temporal regression: per-node (standardise each vertex's series by the values the training steps "
                  "see; test_mse stays in the file's units) or none (the values as stored)")
      ->check(CLI::IsMember({"per-node", "none"}))->capture_default_str();
  cmd->add_option("--train-fraction", flags->train_fraction,
                  "Temporal regression/link: the first fraction of the steps trains, the rest tests")
      ->check(finite_number(0.0, false))->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd->add_option("--negatives", flags->negatives,
                  "Link prediction: sampled negative pairs per positive pair; must equal the partition's "
                  "--link-negatives (default: the partition's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))->capture_default_str();
  cmd->add_option("--cheb-k", flags->cheb_k, "GConvGRU: Chebyshev terms K")->check(CLI::Range(1, 16))->capture_default_str();
  cmd->add_option("--embedding", flags->embedding, "Link prediction: embedding width (0: --hidden)")
      ->check(non_negative())->capture_default_str();
  cmd->footer(std::string("Per-model defaults of the ") + kTemporalDefaultsHelp +
              " (options given on the command line or in --config override them).");
  // Run reports (docs/train.md, "Run reports").
  cmd->add_option(
         "--progress-every", flags->progress_every,
         "When stdout is not a terminal (batch logs): a progress line with the epoch, loss and ETA every N "
         "seconds (0: off)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--trace", flags->trace,
                  "Write a Chrome/Perfetto trace (JSON) of every rank's spmm, gemm, halo and allreduce spans "
                  "(rank 0 writes one merged file; CPU only)");
  cmd->add_option("--tensorboard", flags->tensorboard,
                  "Write TensorBoard event files (loss, evaluation figures, epoch time per epoch) into DIR");
  cmd->callback([flags, cmd] {
    flags->hidden_given = cmd->count("--hidden") > 0;
    flags->epochs_given = cmd->count("--epochs") > 0;
    flags->layers_given = cmd->count("--layers") > 0;
    flags->negatives_given = cmd->count("--negatives") > 0;
    flags->weight_decay_given = cmd->count("--weight-decay") > 0;
    flags->eval_every_given = cmd->count("--eval-every") > 0;
    flags->window_given = cmd->count("--window") > 0;
    flags->clip_given = cmd->count("--clip-grad-norm") > 0;
    flags->lr_given = cmd->count("--lr") > 0;
    flags->patience_given = cmd->count("--patience") > 0;
    flags->best_by_given = cmd->count("--best-by") > 0;
    // Options of other models, given (on the command line or in --config) but unused by this one.
    const std::string& m = flags->model;
    const bool temporal = is_temporal(m);
    const std::pair<const char*, bool> uses[] = {
        {"--cheb-k", m == "gconvgru"}, {"--lags", temporal}, {"--train-fraction", temporal},
        {"--target-scaling", temporal && flags->task == "regression"},
        {"--negatives", temporal}, {"--embedding", temporal}, {"--window", temporal},
        {"--row-normalize", !temporal}};
    flags->unused_options = unused_model_options(*flags);
    for (const auto& [name, used] : uses)
      if (!used && cmd->count(name) > 0)
        flags->unused_options.push_back(std::string(name) + " has no effect with --model " + m + " (ignored)");
    run_train(*flags);
  });
}

}  // namespace halogen::app
