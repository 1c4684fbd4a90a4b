#pragma once
// Trainer: THE epoch runner, for every model (static GCN/SAGE and temporal models alike), on one rank of P
// (every rank runs the same loop; all calls are collective). What differs between models is the Workload
// (train/workload.h): how one optimizer step's gradients are made, and how the model is evaluated.
//
// One epoch: workload.begin_epoch; per optimizer step: workload.step_local (forward, loss, backward, each
// layer's gradient allreduce started as soon as its backward ends: nn::GradientReducer, DDP style) -> wait for
// the buckets -> the loss allreduce and the non-finite check -> Adam -> the parameter check.
// Evaluation every `eval_every` epochs and after the last; best-valid tracking and early stopping when the
// workload reports `valid_acc`; checkpoints (every `checkpoint_every` epochs and at the end, DIR/last.h5; with
// save_best also DIR/best.h5 after each new best valid_acc) and --resume (refused on another graph or with other
// options: RunOptions of the workload, the optimizer and the preprocessing); JSON-lines metrics
// (train/metrics.h) with a header that records the run; TensorBoard scalars (train/tensorboard.h); one progress
// line per evaluated epoch on rank 0, and where stdout is not a terminal a progress line with the ETA every
// `progress_every_s` seconds.
//
// Errors: a NaN/Inf loss or parameter stops training on every rank (UserError on rank 0 naming the epoch and,
// where known, the layer; PeerFailed elsewhere) BEFORE the update that would spread it; the decision is taken
// from allreduced values, so all ranks agree. A step that can fail on one rank (opening the metrics file,
// reading or writing a checkpoint) runs collectively (train/collective_error.h).
//
// Fault injection (tests): HALOGEN_FAULT_KILL_AT_EPOCH=E makes rank 0 SIGKILL itself as epoch E starts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/adam.h"
#include "nn/model.h"
#include "train/run_options.h"
#include "train/temporal_workload.h"
#include "train/workload.h"

namespace halogen::io {
class OutputLock;  // io/atomic_file.h
}  // namespace halogen::io

namespace halogen::train {

class MetricsWriter;      // train/metrics.h
class TensorBoardWriter;  // train/tensorboard.h

// What the runner does, whatever the model.
struct RunConfig {
  int64_t epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;            // L2 on the FIRST layer's parameters (Kipf & Welling)...
  bool weight_decay_all_layers = false;  // ...or on every layer
  float clip_grad_norm = 0.0f;           // > 0: gradients scaled to at most this global L2 norm (nn::AdamConfig)
  int64_t eval_every = 1;
  int64_t patience = 0;              // stop after this many evaluations without a better one; 0 = off
  // What "better" means, for the best epoch (test_acc_at_best, --save-best) and --patience: a higher valid_acc
  // (false) or a lower valid_loss (true; GCNII's reference selects and stops by it).
  bool best_by_loss = false;
  std::string metrics_path;          // JSON lines (rank 0); empty = none
  std::string checkpoint_dir;        // empty = no checkpoints
  int64_t checkpoint_every = 0;      // epochs between checkpoints; 0 = only at the end
  bool resume = false;               // continue from checkpoint_dir
  bool save_best = false;            // keep checkpoint_dir/best.h5: the model of the best valid_acc so far
  bool allow_lr_change = false;      // --resume may continue with another lr
  // Recorded in checkpoints (train/checkpoint.h); --resume refuses another graph_checksum or other options.
  std::string graph_checksum;        // io::PartitionMeta::graph_checksum (identifies the graph file)
  std::string partition;             // JSON object describing the partition (recorded, may differ on resume)
  RunOptions preprocessing;          // options applied to the input before the workload, e.g. row_normalize
  bool print_epochs = true;          // rank 0 prints one line per evaluated epoch
  // The resolved options of the command as a JSON object, recorded in the metrics header (train/metrics.h).
  std::string config_json = "{}";
  // When stdout is not a terminal (a Slurm log), rank 0 prints "progress: epoch e/E | loss | elapsed | ETA"
  // at most this often (seconds), whatever print_epochs says; <= 0: never. On a terminal the epoch lines
  // suffice (under mpirun/srun a rank cannot tell where its output ends up: it prints them).
  double progress_every_s = 30;
  std::string tensorboard_dir;  // TensorBoard event files (rank 0; train/tensorboard.h); empty = none
  std::string trace_path;       // --trace: Chrome/Perfetto trace of every rank (rank 0; train/trace.h); empty = none
};

// Static graphs: GCN/SAGE node classification (train/node_classification.h).
struct TrainConfig : RunConfig {
  nn::ModelConfig model;
  Device device = Device::cpu;
};

// Dynamic graphs: a temporal model and task (train/temporal_workload.h). Defaults of `halogen train` for them.
struct TemporalTrainConfig : RunConfig, TemporalSetup {
  TemporalTrainConfig() {
    epochs = 100;
    weight_decay = 0.0f;
    weight_decay_all_layers = true;
    eval_every = 10;
  }
};

struct EpochRecord {
  int64_t epoch = 0;
  double loss = 0;              // global mean training loss of the epoch
  bool evaluated = false;
  Metrics metrics;              // of the evaluation after this epoch (when evaluated)
  double train_acc = 0, valid_acc = 0, test_acc = 0;  // node classification: the same as in `metrics`
  // Max over ranks, milliseconds. epoch = the training pass (evaluation excluded); other = epoch - spmm - gemm -
  // halo_exposed - allreduce_exposed. allreduce = from the first gradient allreduce started to the last one
  // finished; allreduce_exposed = the part of it the backward pass did not hide.
  double epoch_ms = 0, spmm_ms = 0, gemm_ms = 0, halo_ms = 0, halo_exposed_ms = 0, allreduce_ms = 0,
         allreduce_exposed_ms = 0, other_ms = 0, eval_ms = 0;
  double snapshots_per_s = 0;   // temporal models: trained time steps per second of epoch_ms
  // Max over ranks: the bytes moved in the spmm phase and the flops of the gemm phase (nn::PhaseTimes; a rank's
  // roofline is about spmm_bytes / spmm_ms and gemm_flops / gemm_ms).
  double spmm_bytes = 0, gemm_flops = 0;
  // Stragglers: a rank's compute = its own epoch_ms - halo_exposed_ms - allreduce_exposed_ms (the time it was
  // not waiting for others); the largest and smallest over ranks, and the rank of the largest (the slowest; the
  // lowest-numbered one on a tie).
  double compute_ms_max = 0, compute_ms_min = 0;
  int slowest_rank = 0;
};

struct TrainResult {
  std::vector<EpochRecord> epochs;  // the epochs this run executed
  int64_t best_epoch = 0;
  double best_valid_acc = 0, test_acc_at_best = 0, train_acc_at_best = 0;
  double best_valid_loss = 0;       // valid_loss of the best epoch (0 before one)
  Metrics final_metrics;            // of the last evaluation
  Metrics baselines;                // figures that do not depend on the model (temporal regression)
  double mean_epoch_ms = 0;
  double snapshots_per_s = 0;       // temporal: trained steps per second over the run's epochs
  double exposed_comm_share = 0;    // (halo exposed + allreduce exposed) / epoch time, over the run
  int64_t last_epoch = 0;
  bool stopped_early = false;
  int64_t bytes_before_training = 0;  // max over ranks of Buffer bytes in use before epoch 1
  int64_t allocated_bytes = 0;        // max over ranks of the peak Buffer bytes of the training loop
  int64_t estimated_bytes = 0;        // the workload's estimate (max over ranks)
};

class Trainer {
 public:
  Trainer(comm::Communicator& comm, std::unique_ptr<Workload> workload, const RunConfig& config);
  // Node classification on a static shard.
  Trainer(comm::Communicator& comm, const graph::Shard& shard, const TrainConfig& config);
  // The same, emptying the shard's adjacency and features once the model holds them (NodeClassification's
  // Shard&&): `halogen train` never holds two copies of them.
  Trainer(comm::Communicator& comm, graph::Shard&& shard, const TrainConfig& config);
  // A temporal model on a dynamic shard.
  Trainer(comm::Communicator& comm, const graph::Shard& shard, const TemporalTrainConfig& config);
  ~Trainer();

  TrainResult run();
  Workload& workload() { return *workload_; }

 private:
  struct Progress;
  void check_config() const;
  void lock_outputs();
  int64_t restore(TrainResult& result, Progress& progress);
  // One untimed gradient allreduce (the epochs' buckets, on zeroed gradients) and one host allreduce before epoch
  // 1: NCCL connects lazily on an operation's first use, which would otherwise land in epoch 1's time.
  void warm_up_communicator();
  void report_memory_before_training(TrainResult& result);
  void train_epoch(int64_t epoch, EpochRecord& record);
  double optimizer_step(int64_t epoch, int64_t step);
  [[noreturn]] void fail_everywhere(const std::string& message);
  void take_phase_times(EpochRecord& record);
  void evaluate(EpochRecord& record);
  bool track_best(const EpochRecord& record, TrainResult& result, Progress& progress);
  RunOptions run_options() const;
  void save_checkpoint(const std::string& path, int64_t epoch, const TrainResult& result, const Progress& progress);
  void finish(TrainResult& result, double trained_ms, double exposed_ms, int64_t trained_epochs);
  void open_outputs(int64_t first_epoch);
  void write_tensorboard(const EpochRecord& record);

  comm::Communicator& comm_;
  std::unique_ptr<Workload> workload_;
  RunConfig config_;
  std::unique_ptr<nn::Adam> adam_;
  std::unique_ptr<nn::GradientReducer> reducer_;  // on the workload's gradients, timed by its clock
  std::unique_ptr<MetricsWriter> metrics_;
  // Rank 0's locks on this run's outputs (checkpoint files, metrics file), held from before --resume reads the
  // checkpoint until the run ends: a second job on one of them is refused with the holder's pid, and taking
  // a lock removes what a killed writer left beside that output (io::OutputLock).
  std::vector<std::unique_ptr<io::OutputLock>> output_locks_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::vector<double> phase_buffer_;          // take_phase_times' reduction: 9 phase figures + one slot per rank
  std::unique_ptr<nn::TraceRecorder> trace_;  // --trace (allocated before epoch 1)
  double trace_origin_s_ = 0;
};

}  // namespace halogen::train
