#pragma once
// Wall time and peak resident memory of each phase of a long single-process job (read, partition, write).
// A phase's peak is sampled: a background thread reads the resident set size (/proc/self/statm) every 5 ms
// while the phase runs. The kernel's own high-water mark is left alone, so `/usr/bin/time -v` still reports
// the true peak of the whole process.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace halogen::partition {

struct PhaseRecord {
  std::string name;
  double seconds = 0;
  int64_t peak_rss_bytes = 0;  // sampled peak during the phase
};

// Resident set size now, and the process's peak so far (VmHWM); bytes, 0 when unknown.
int64_t current_rss_bytes();
int64_t peak_rss_bytes();

class PhaseLog {
 public:
  PhaseLog() = default;
  ~PhaseLog();
  PhaseLog(const PhaseLog&) = delete;
  PhaseLog& operator=(const PhaseLog&) = delete;

  void begin(const std::string& name);
  void end();  // records the phase begun last
  const std::vector<PhaseRecord>& phases() const { return phases_; }

 private:
  void stop_sampler();

  std::vector<PhaseRecord> phases_;
  std::string current_;
  double start_ = 0;
  std::atomic<bool> sampling_{false};
  std::atomic<int64_t> phase_peak_{0};
  std::thread sampler_;
};

}  // namespace halogen::partition
