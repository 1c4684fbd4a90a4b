#pragma once
// Wall-clock timers for host-side phases. Device phases are timed with CUDA events in kernels/cuda.
#include <chrono>

namespace halogen {

inline double wall_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// Measures the time since construction or the last restart().
class Stopwatch {
 public:
  Stopwatch() : start_(wall_seconds()) {}
  void restart() { start_ = wall_seconds(); }
  double seconds() const { return wall_seconds() - start_; }
  double milliseconds() const { return 1e3 * seconds(); }

 private:
  double start_;
};

// Adds the lifetime of the scope to `*accumulator_ms`.
class ScopedTimer {
 public:
  explicit ScopedTimer(double* accumulator_ms) : accumulator_ms_(accumulator_ms) {}
  ~ScopedTimer() { *accumulator_ms_ += watch_.milliseconds(); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  double* accumulator_ms_;
  Stopwatch watch_;
};

}  // namespace halogen
