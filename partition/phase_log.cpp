#include "partition/phase_log.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/timer.h"

namespace halogen::partition {

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

void PhaseLog::begin(const std::string& name) {
  HALOGEN_ASSERT(current_.empty(), "phase %s begun inside phase %s", name.c_str(), current_.c_str());
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  if (!clear) per_phase_ = false;
  current_ = name;
  start_ = wall_seconds();
}

void PhaseLog::end() {
  HALOGEN_ASSERT(!current_.empty(), "PhaseLog::end without begin");
  phases_.push_back({current_, wall_seconds() - start_, peak_rss_bytes()});
  current_.clear();
}

}  // namespace halogen::partition
