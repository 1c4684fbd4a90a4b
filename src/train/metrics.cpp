#include "train/metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/error.h"
#include "core/format.h"
#include "core/runtime.h"

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
      if (name != "train_acc" && name != "valid_acc" && name != "test_acc" && name != "halo_bytes")  // in the file
        line += strformat(" %s %.4f", name.c_str(), value);
  }
  line += strformat(" | %.1f ms", r.epoch_ms);
  if (r.snapshots_per_s > 0) line += strformat(", %.1f snapshots/s", r.snapshots_per_s);
  line += strformat(" | spmm %.1f gemm %.1f halo %.1f (exposed %.1f) allreduce %.1f (exposed %.1f) other %.1f",
                    r.spmm_ms, r.gemm_ms, r.halo_ms, r.halo_exposed_ms, r.allreduce_ms, r.allreduce_exposed_ms,
                    r.other_ms);
  return line;
}

namespace {

// Keeps what a run resumed after `epoch` continues: the header and the epochs up to `epoch`; drops later
// epochs, final records and lines that do not parse (a line torn by a crash). Rewritten through a temporary
// file and a rename, so a crash here leaves the old file or the new one. Returns whether a header was kept.
bool keep_lines_up_to(const std::string& path, int64_t epoch) {
  std::ifstream in(path);
  if (!in) return false;  // missing: the resumed run creates it
  std::string kept, line;
  bool header = false;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    const bool is_header = j.contains("config");
    const bool is_epoch = !is_header && !j.contains("final") && j.contains("epoch") &&
                          j["epoch"].is_number_integer() && j["epoch"].get<int64_t>() <= epoch;
    if ((is_header && !header) || is_epoch) kept += line + "\n";
    header = header || is_header;
  }
  in.close();
  const std::string tmp = path + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "w");
  HALOGEN_USER_CHECK(out != nullptr, "%s: cannot write metrics: %s", tmp.c_str(), std::strerror(errno));
  const bool written = std::fwrite(kept.data(), 1, kept.size(), out) == kept.size();
  const int write_errno = errno;
  const bool closed = std::fclose(out) == 0;
  HALOGEN_USER_CHECK(written && closed, "%s: cannot write metrics: %s", tmp.c_str(),
                     std::strerror(write_errno));
  HALOGEN_USER_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "%s: cannot replace metrics file: %s",
                     path.c_str(), std::strerror(errno));
  return header;
}

}  // namespace

std::vector<std::string> rank_host_names(comm::Communicator& comm) {
  // Through the communicator's one integer collective: rank r writes its name (up to 255 bytes) into its slot
  // of a zeroed array, and the sum over ranks is every rank's name. Once per run, so its size does not
  // matter.
  constexpr int64_t kSlot = 256 / sizeof(int64_t);
  std::vector<int64_t> slots(static_cast<size_t>(kSlot * comm.size()), 0);
  const std::string& name = host_name();
  std::memcpy(slots.data() + kSlot * comm.rank(), name.data(), std::min<size_t>(name.size(), 255));
  comm.allreduce_sum(slots.data(), static_cast<int64_t>(slots.size()));
  std::vector<std::string> hosts;
  for (int r = 0; r < comm.size(); ++r) {
    const char* bytes = reinterpret_cast<const char*>(slots.data() + kSlot * r);
    hosts.emplace_back(bytes, strnlen(bytes, 255));
  }
  return hosts;
}

std::vector<std::string> gather_host_names(comm::Communicator& comm) {
  std::vector<std::string> hosts;
  for (const std::string& host : rank_host_names(comm))
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  return hosts;
}

MetricsWriter::MetricsWriter(const std::string& path, int64_t resume_after_epoch) : path_(path) {
  if (resume_after_epoch > 0) has_header_ = keep_lines_up_to(path, resume_after_epoch);
  file_ = std::fopen(path.c_str(), resume_after_epoch > 0 ? "a" : "w");
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

void MetricsWriter::header(const RunHeader& h) {
  char start_time[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(start_time, sizeof(start_time), "%Y-%m-%dT%H:%M:%SZ", &utc);
  nlohmann::json j = {{"config", nlohmann::json::parse(h.config_json)},
                      {"version", build_version()},
                      {"commit", build_commit()},
                      {"hosts", h.hosts},
                      {"ranks", h.ranks},
                      {"device", h.device},
                      {"start_time", start_time}};
  if (h.resumed_after_epoch > 0) j["resumed_after_epoch"] = h.resumed_after_epoch;
  if (!h.memory_plan.empty()) {
    nlohmann::json plan = nlohmann::json::object();
    double total = 0;
    for (const auto& [name, bytes] : h.memory_plan) {
      plan[name] = static_cast<int64_t>(bytes);
      total += bytes;
    }
    plan["total"] = static_cast<int64_t>(total);
    j["memory_plan"] = plan;
  }
  line(j.dump());
  has_header_ = true;
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
                      {"eval_ms", r.eval_ms},
                      {"compute_ms_max", r.compute_ms_max},
                      {"compute_ms_min", r.compute_ms_min},
                      {"slowest_rank", r.slowest_rank}};
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
