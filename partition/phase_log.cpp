#include "partition/phase_log.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/timer.h"

namespace halogen::partition {

int64_t current_rss_bytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm) return 0;
  long long size_pages = 0, resident_pages = 0;
  const int got = std::fscanf(statm, "%lld %lld", &size_pages, &resident_pages);
  std::fclose(statm);
  return got == 2 ? resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      int64_t kib = 0;
      fields >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

PhaseLog::~PhaseLog() {
  stop_sampler();
}

void PhaseLog::stop_sampler() {
  sampling_ = false;
  if (sampler_.joinable()) sampler_.join();
}

void PhaseLog::begin(const std::string& name) {
  interrupt::set_phase(name);  // named in the line of an interrupted job (core/interrupt.h)
  HALOGEN_ASSERT(current_.empty(), "phase %s begun inside phase %s", name.c_str(), current_.c_str());
  current_ = name;
  start_ = wall_seconds();
  phase_peak_ = current_rss_bytes();
  sampling_ = true;
  sampler_ = std::thread([this] {
    while (sampling_) {
      const int64_t rss = current_rss_bytes();
      int64_t seen = phase_peak_.load();
      while (rss > seen && !phase_peak_.compare_exchange_weak(seen, rss)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
}

void PhaseLog::end() {
  HALOGEN_ASSERT(!current_.empty(), "PhaseLog::end without begin");
  stop_sampler();
  const int64_t rss = current_rss_bytes();
  phases_.push_back({current_, wall_seconds() - start_, std::max(phase_peak_.load(), rss)});
  current_.clear();
}

}  // namespace halogen::partition
