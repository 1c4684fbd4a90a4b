#pragma once
// GPU phase timing with CUDA events, and NVTX ranges for Nsight Systems. Declared without CUDA headers so
// that host code (train, apps) can use them in CUDA builds (guard the include with HALOGEN_HAVE_CUDA).
//
//   cuda::PhaseTimer spmm_timer;                 // events made here, before the first epoch
//   spmm_timer.begin(stream); ...enqueue... spmm_timer.end(stream);   // any number of intervals per epoch
//   double ms = spmm_timer.take_ms();            // after the epoch: waits for the last end event, sums the
//                                                // intervals and starts over
//   { cuda::NvtxRange range("layer 1 forward"); ... }
#include <vector>

namespace halogen::cuda {

// Sum of GPU-side durations of [begin, end) intervals recorded on streams. No host synchronisation until
// take_ms(). Intervals must be closed (end after begin) before take_ms(). Events are created in the
// constructor (`capacity` intervals) and reused; more intervals per epoch than that grow the pool once.
class PhaseTimer {
 public:
  explicit PhaseTimer(int capacity = 16);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  void begin(void* stream);  // cudaStream_t
  void end(void* stream);
  // Milliseconds of all intervals since the last take_ms(); synchronises with the last end event.
  double take_ms();
  int intervals() const { return used_; }

 private:
  void grow();
  std::vector<void*> begin_events_, end_events_;  // cudaEvent_t
  int used_ = 0;
  bool open_ = false;
};

// NVTX push/pop range for the lifetime of the object (visible in Nsight Systems; free when no profiler).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace halogen::cuda
