#pragma once
// How training progress is reported: the console line of DESIGN.md and the JSON lines of --metrics.
//   epoch 12/200 | loss 0.4132 | train 0.91 val 0.80 | 38.1 ms | spmm 12.0 gemm 9.2 halo 9.8 (exposed 1.1)
//   allreduce 1.1 (exposed 0.3) other 4.0
// JSON: one object per evaluated epoch {epoch, loss, train_acc, valid_acc, test_acc, epoch_ms, spmm_ms,
// gemm_ms, halo_ms, halo_exposed_ms, allreduce_ms, allreduce_exposed_ms, other_ms, eval_ms}, then
// {"final": true, best_epoch, best_valid_acc, test_acc_at_best, train_acc_at_best, mean_epoch_ms, last_epoch,
// stopped_early, ranks, allocated_bytes, estimated_bytes}. Doubles are written with round-trip precision.
#include <cstdio>
#include <string>

#include "train/trainer.h"

namespace halogen::train {

std::string epoch_line(const EpochRecord& record, int64_t total_epochs);

class MetricsWriter {
 public:
  MetricsWriter() = default;
  explicit MetricsWriter(const std::string& path);  // UserError when it cannot be created
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void epoch(const EpochRecord& record);
  void final(const TrainResult& result, int ranks);

 private:
  void line(const std::string& json);
  std::string path_;
  FILE* file_ = nullptr;
};

}  // namespace halogen::train
