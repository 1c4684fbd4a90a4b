#include "train/metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"

namespace halogen::train {
namespace {

// Node classification keeps its short console names.
const char* console_name(const std::string& name) {
  if (name == "train_acc") return "train";
  if (name == "valid_acc") return "val";
  if (name == "test_acc") return "test";
  return name.c_str();
}

}  // namespace

std::string metrics_text(const Metrics& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) text += strformat(" %s %.4f", name.c_str(), value);
  return text;
}

std::string epoch_line(const EpochRecord& r, int64_t total_epochs) {
  std::string line = strformat("epoch %lld/%lld | loss %.4f", (long long)r.epoch, (long long)total_epochs, r.loss);
  if (r.evaluated && !r.metrics.empty()) {
    line += " |";
    // Classification in the order train, val, test; other metrics by name.
    for (const char* name : {"train_acc", "valid_acc", "test_acc"})
      if (r.metrics.count(name)) line += strformat(" %s %.4f", console_name(name), r.metrics.at(name));
    for (const auto& [name, value] : r.metrics)
      if (name != "train_acc" && name != "valid_acc" && name != "test_acc")
        line += strformat(" %s %.4f", name.c_str(), value);
  }
  line += strformat(" | %.1f ms", r.epoch_ms);
  if (r.snapshots_per_s > 0) line += strformat(", %.1f snapshots/s", r.snapshots_per_s);
  line += strformat(" | spmm %.1f gemm %.1f halo %.1f (exposed %.1f) allreduce %.1f (exposed %.1f) other %.1f",
                    r.spmm_ms, r.gemm_ms, r.halo_ms, r.halo_exposed_ms, r.allreduce_ms, r.allreduce_exposed_ms,
                    r.other_ms);
  return line;
}

MetricsWriter::MetricsWriter(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  HALOGEN_USER_CHECK(file_ != nullptr, "%s: cannot write metrics: %s", path.c_str(), std::strerror(errno));
  struct stat status {};
  if (::fstat(::fileno(file_), &status) == 0 && S_ISREG(status.st_mode)) complete_bytes_ = status.st_size;
}

MetricsWriter::~MetricsWriter() {
  if (file_) std::fclose(file_);
}

void MetricsWriter::line(const std::string& json) {
  if (!file_) return;
  const bool written = std::fputs(json.c_str(), file_) >= 0 && std::fputc('\n', file_) != EOF &&
                       std::fflush(file_) == 0;
  if (written) {
    complete_bytes_ += static_cast<long>(json.size()) + 1;
    return;
  }
  const int error = errno;
  std::fclose(file_);  // first, so that nothing still buffered is written after the cut
  file_ = nullptr;
  struct stat status {};
  if (::stat(path_.c_str(), &status) == 0 && S_ISREG(status.st_mode) && status.st_size > complete_bytes_ &&
      ::truncate(path_.c_str(), complete_bytes_) != 0) {
    // Could not cut the partial line off: the error below still stops the job.
  }
  throw UserError(strformat("%s: cannot write metrics: %s", path_.c_str(), std::strerror(error)));
}

void MetricsWriter::epoch(const EpochRecord& r, const Workload& workload) {
  nlohmann::json j = {{"epoch", r.epoch},
                      {"task", workload.task_name()},
                      {"loss", r.loss},
                      {"epoch_ms", r.epoch_ms},
                      {"spmm_ms", r.spmm_ms},
                      {"gemm_ms", r.gemm_ms},
                      {"halo_ms", r.halo_ms},
                      {"halo_exposed_ms", r.halo_exposed_ms},
                      {"allreduce_ms", r.allreduce_ms},
                      {"allreduce_exposed_ms", r.allreduce_exposed_ms},
                      {"other_ms", r.other_ms},
                      {"eval_ms", r.eval_ms}};
  for (const auto& [name, value] : r.metrics) j[name] = value;
  if (r.snapshots_per_s > 0) j["snapshots_per_s"] = r.snapshots_per_s;
  line(j.dump());
}

void MetricsWriter::final(const TrainResult& result, const Workload& workload, int ranks) {
  nlohmann::json j = {{"final", true},
                      {"model", workload.model_name()},
                      {"task", workload.task_name()},
                      {"ranks", ranks},
                      {"epochs", result.last_epoch},
                      {"best_epoch", result.best_epoch},
                      {"best_valid_acc", result.best_valid_acc},
                      {"test_acc_at_best", result.test_acc_at_best},
                      {"train_acc_at_best", result.train_acc_at_best},
                      {"mean_epoch_ms", result.mean_epoch_ms},
                      {"last_epoch", result.last_epoch},
                      {"stopped_early", result.stopped_early},
                      {"exposed_comm_share", result.exposed_comm_share},
                      {"allocated_bytes", result.allocated_bytes},
                      {"estimated_bytes", result.estimated_bytes},
                      {"bytes_before_training", result.bytes_before_training}};
  if (!result.epochs.empty()) j["final_loss"] = result.epochs.back().loss;
  if (result.snapshots_per_s > 0) j["snapshots_per_s"] = result.snapshots_per_s;
  for (const auto& [name, value] : result.final_metrics) j[name] = value;
  for (const auto& [name, value] : result.baselines) j[name] = value;
  for (const auto& [name, value] : workload.summary()) j[name] = value;
  line(j.dump());
}

}  // namespace halogen::train
