#include "train/metrics.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"

namespace halogen::train {

std::string epoch_line(const EpochRecord& r, int64_t total_epochs) {
  std::string line = strformat("epoch %lld/%lld | loss %.4f", (long long)r.epoch, (long long)total_epochs, r.loss);
  if (r.evaluated) line += strformat(" | train %.4f val %.4f test %.4f", r.train_acc, r.valid_acc, r.test_acc);
  line += strformat(" | %.1f ms | spmm %.1f gemm %.1f halo %.1f (exposed %.1f) allreduce %.1f (exposed %.1f) "
                    "other %.1f",
                    r.epoch_ms, r.spmm_ms, r.gemm_ms, r.halo_ms, r.halo_exposed_ms, r.allreduce_ms,
                    r.allreduce_exposed_ms, r.other_ms);
  return line;
}

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  HALOGEN_USER_CHECK(file_ != nullptr, "%s: cannot write metrics: %s", path.c_str(), std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::line(const std::string& json) {
  if (!file_) return;
  std::fputs(json.c_str(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

void MetricsWriter::epoch(const EpochRecord& r) {
  nlohmann::json j = {{"epoch", r.epoch},       {"loss", r.loss},
                      {"train_acc", r.train_acc}, {"valid_acc", r.valid_acc},
                      {"test_acc", r.test_acc},   {"epoch_ms", r.epoch_ms},
                      {"spmm_ms", r.spmm_ms},     {"gemm_ms", r.gemm_ms},
                      {"halo_ms", r.halo_ms},     {"halo_exposed_ms", r.halo_exposed_ms},
                      {"allreduce_ms", r.allreduce_ms}, {"allreduce_exposed_ms", r.allreduce_exposed_ms},
                      {"other_ms", r.other_ms},
                      {"eval_ms", r.eval_ms}};
  line(j.dump());
}

void MetricsWriter::final(const TrainResult& result, int ranks) {
  nlohmann::json j = {{"final", true},
                      {"best_epoch", result.best_epoch},
                      {"best_valid_acc", result.best_valid_acc},
                      {"test_acc_at_best", result.test_acc_at_best},
                      {"train_acc_at_best", result.train_acc_at_best},
                      {"mean_epoch_ms", result.mean_epoch_ms},
                      {"last_epoch", result.last_epoch},
                      {"stopped_early", result.stopped_early},
                      {"ranks", ranks},
                      {"allocated_bytes", result.allocated_bytes},
                      {"estimated_bytes", result.estimated_bytes}};
  line(j.dump());
}

}  // namespace halogen::train
