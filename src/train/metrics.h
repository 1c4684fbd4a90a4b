#pragma once
// How training progress is reported, for every model: the console line of DESIGN.md and the JSON lines of
// --metrics.
//   epoch 12/200 | loss 0.4132 | train 0.9100 val 0.8000 test 0.7900 | 38.1 ms | spmm 12.0 gemm 9.2 halo 9.8
//   (exposed 1.1) allreduce 1.1 (exposed 0.4) other 2.0
// (temporal models show their metrics by name, e.g. "test_mse 0.9962", and "..., 812.3 snapshots/s").
// JSON: first a header {"config": {<the resolved options of the command, by option name>}, "version",
// "commit", "hosts": [<distinct host names, in rank order>], "ranks", "device", "start_time" (UTC, ISO
// 8601)[, "resumed_after_epoch"][, "memory_plan": {structure, halo, features, activations, gradients, workspace,
// evaluation, parameters, optimizer, total} (bytes per rank, each the max over ranks; `halogen info`'s table)]}, then one object per evaluated epoch {epoch, task, loss, <metrics by name:
// train_acc valid_acc test_acc | test_mse ... >, epoch_ms, spmm_ms, gemm_ms, halo_ms, halo_exposed_ms,
// allreduce_ms, allreduce_exposed_ms, other_ms, eval_ms, compute_ms_max, compute_ms_min, slowest_rank
// [, snapshots_per_s]}, then {"final": true, model,
// task, ranks, epochs (last_epoch), best_epoch, best_valid_acc, test_acc_at_best, train_acc_at_best,
// mean_epoch_ms, last_epoch, stopped_early, allocated_bytes, estimated_bytes, bytes_before_training,
// exposed_comm_share, final_loss, <final metrics>, <baselines>, <workload summary>[, snapshots_per_s]}.
// Doubles are written with round-trip precision. (node classification also valid_loss: mean cross-entropy
// over the validation vertices, dropout off). A resumed run (--resume) continues the same file (creating it
// if missing): it first drops what follows the checkpoint's epoch (epochs run after it by the interrupted
// run, a final record, a torn last line), then appends, so the file holds epochs 1..N once each. The file
// holds exactly one header, the one of the run that created it: a resumed run writes one only into a file
// that has none, with "resumed_after_epoch". Readers tell the three kinds of line apart by their keys:
// "config" (header), "final", else an epoch.
#include <cstdio>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace halogen::train {

std::string epoch_line(const EpochRecord& record, int64_t total_epochs);
// " name value" for every metric (4 decimals).
std::string metrics_text(const Metrics& metrics);

// What the header records about the run.
struct RunHeader {
  std::string config_json = "{}";  // a JSON object: the resolved options (RunConfig::config_json)
  std::vector<std::string> hosts;  // gather_host_names()
  int ranks = 1;
  std::string device;               // "cpu" | "cuda"
  int64_t resumed_after_epoch = 0;  // 0: a fresh run
  // Planned bytes per rank by what holds them (Workload::memory_plan, each the max over ranks), written as
  // "memory_plan": {<name>: bytes, ..., "total": their sum}; omitted when empty.
  Metrics memory_plan;
};

// The distinct host names of the job's ranks, in rank order (collective; every rank gets the list).
std::vector<std::string> gather_host_names(comm::Communicator& comm);
// Every rank's host name, in rank order (collective).
std::vector<std::string> rank_host_names(comm::Communicator& comm);

class MetricsWriter {
 public:
  // UserError naming the file when it cannot be opened. `resume_after_epoch` 0: a fresh file (truncated);
  // E > 0: continue the file of a run resumed from epoch E's checkpoint (see above; created if missing).
  MetricsWriter(const std::string& path, int64_t resume_after_epoch);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  // Whether the file already holds a header (a resumed run's file); header() writes one (the first line).
  bool has_header() const { return has_header_; }
  void header(const RunHeader& header);
  void epoch(const EpochRecord& record, const Workload& workload);
  void final(const TrainResult& result, const Workload& workload, int ranks);

 private:
  // Appends one line; on a failed write (a full disk) the file is cut back to its last complete line, closed,
  // and a UserError naming it is thrown: a reader never finds half a JSON line.
  void line(const std::string& json);
  std::string path_;
  FILE* file_ = nullptr;
  long complete_bytes_ = 0;  // size of the file up to its last complete line
  bool has_header_ = false;
};

}  // namespace halogen::train
