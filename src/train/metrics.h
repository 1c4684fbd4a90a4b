#pragma once
// How training progress is reported, for every model: the console line of DESIGN.md and the JSON lines of
// --metrics.
//   epoch 12/200 | loss 0.4132 | train 0.9100 val 0.8000 test 0.7900 | 38.1 ms | spmm 12.0 gemm 9.2 halo 9.8
//   (exposed 1.1) allreduce 1.1 (exposed 0.4) other 2.0
// (temporal models show their metrics by name, e.g. "test_mse 0.9962", and "..., 812.3 snapshots/s").
// JSON: one object per evaluated epoch {epoch, task, loss, <metrics by name: train_acc valid_acc test_acc |
// test_mse ... >, epoch_ms, spmm_ms, gemm_ms, halo_ms, halo_exposed_ms, allreduce_ms, allreduce_exposed_ms,
// other_ms, eval_ms[, snapshots_per_s]}, then {"final": true, model, task, ranks, epochs (last_epoch),
// best_epoch, best_valid_acc, test_acc_at_best, train_acc_at_best, mean_epoch_ms, last_epoch, stopped_early,
// allocated_bytes, estimated_bytes, bytes_before_training, exposed_comm_share, final_loss, <final metrics>,
// <baselines>, <workload summary>[, snapshots_per_s]}. Doubles are written with round-trip precision.
// A resumed run (--resume) appends to the file: the epochs it runs follow those of the run it continues.
#include <cstdio>
#include <string>

#include "train/trainer.h"

namespace halogen::train {

std::string epoch_line(const EpochRecord& record, int64_t total_epochs);
// " name value" for every metric (4 decimals).
std::string metrics_text(const Metrics& metrics);

class MetricsWriter {
 public:
  // UserError naming the file when it cannot be opened. `append`: continue an existing file (resume).
  MetricsWriter(const std::string& path, bool append);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void epoch(const EpochRecord& record, const Workload& workload);
  void final(const TrainResult& result, const Workload& workload, int ranks);

 private:
  // Appends one line; on a failed write (a full disk) the file is cut back to its last complete line, closed,
  // and a UserError naming it is thrown: a reader never finds half a JSON line.
  void line(const std::string& json);
  std::string path_;
  FILE* file_ = nullptr;
  long complete_bytes_ = 0;  // size of the file up to its last complete line
};

}  // namespace halogen::train
