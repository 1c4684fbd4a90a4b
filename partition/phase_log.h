#pragma once
// Wall time and peak resident memory of each phase of a long single-process job (read, partition, write).
// Peak memory per phase uses Linux's resettable high-water mark (/proc/self/clear_refs "5", VmHWM); where it
// cannot be reset the figure is the peak since process start (`peak_is_per_phase` says which).
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::partition {

struct PhaseRecord {
  std::string name;
  double seconds = 0;
  int64_t peak_rss_bytes = 0;
};

// Peak resident set size of this process (VmHWM), bytes; 0 when unknown.
int64_t peak_rss_bytes();

class PhaseLog {
 public:
  void begin(const std::string& name);
  void end();  // records the phase begun last
  const std::vector<PhaseRecord>& phases() const { return phases_; }
  bool peak_is_per_phase() const { return per_phase_; }

 private:
  std::vector<PhaseRecord> phases_;
  std::string current_;
  double start_ = 0;
  bool per_phase_ = true;
};

}  // namespace halogen::partition
