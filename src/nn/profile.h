#pragma once
// Per-phase timing of a training step that is right on both backends, without #ifdefs in layer code.
//
//   clock.begin(Phase::spmm, stream); ...enqueue work... clock.end(Phase::spmm, stream);
//   { PhaseScope scope(clock, Phase::gemm, stream); ... }            // the same as a scope
//   PhaseTimes t = clock.take();   // once per epoch, AFTER the loss has been read: milliseconds per phase since
//                                  // the last take(), then starts over
//
// make_phase_clock(Device::cpu): wall-clock intervals on the host (CPU kernels run synchronously).
// make_phase_clock(Device::cuda): a kernels::device::PhaseTimer (CUDA events recorded on `stream`) per
// phase, so the intervals are GPU time, not the time it took to enqueue; nothing synchronises the host before
// take(), which waits for the last recorded event (free after the loss read, which synchronised anyway).
//
// Contract: intervals of ONE phase never nest or overlap; intervals of different phases may (halo_total spans
// the local products it hides). Every begin() is closed by end() on the same stream before take().
//
// Phases: spmm, gemm, elementwise (bias, relu, dropout, masks, loss) are accumulated by the layers and the
// model; halo_exposed is the time spent in HaloExchange::start_* / finish_* (packing, posting, waiting,
// unpacking: the communication the local products did not hide), halo_total the time from start_* to the end
// of finish_* (in flight); allreduce is the gradient allreduce from its first bucket's start to the end of
// GradientReducer::finish() (in flight, nn/gradient_reducer.h) plus the trainer's loss allreduce, and
// allreduce_exposed the part of it the backward pass did not hide (the wait in finish(), the loss allreduce);
// optimizer is the trainer's.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::nn {

enum class Phase : int { spmm, gemm, elementwise, halo_exposed, halo_total, allreduce, optimizer, allreduce_exposed };
constexpr int kNumPhases = 8;

struct PhaseTimes {
  double spmm_ms = 0;
  double gemm_ms = 0;
  double elementwise_ms = 0;
  double halo_exposed_ms = 0;
  double halo_total_ms = 0;
  double allreduce_ms = 0;
  double optimizer_ms = 0;
  double allreduce_exposed_ms = 0;
  // Work inside the spmm and gemm intervals (kernels::work_count): the bytes the spmm phase moved and the flops
  // of the gemm phase, for the roofline of `bench epoch`.
  double spmm_bytes = 0, gemm_flops = 0;
  double& operator[](Phase phase);
  void reset() { *this = PhaseTimes{}; }
};

// The phase's name in traces ("spmm", "halo wait", ...).
const char* phase_name(Phase phase);

// One interval of one phase on this rank, for `train --trace` (train/trace.h): seconds on the host's wall clock.
struct TraceSpan {
  int32_t phase = 0;
  int32_t epoch = 0;
  double begin_s = 0, end_s = 0;
};

// Keeps the spans a clock reports, up to a capacity allocated once (no allocation while training); spans past
// it are counted, not kept.
class TraceRecorder {
 public:
  explicit TraceRecorder(int64_t capacity);
  void set_epoch(int64_t epoch) { epoch_ = static_cast<int32_t>(epoch); }
  void record(Phase phase, double begin_s, double end_s) {
    if (static_cast<int64_t>(spans_.size()) >= capacity_) {
      ++dropped_;
      return;
    }
    spans_.push_back(TraceSpan{static_cast<int32_t>(phase), epoch_, begin_s, end_s});
  }
  const std::vector<TraceSpan>& spans() const { return spans_; }
  int64_t dropped() const { return dropped_; }

 private:
  int64_t capacity_;
  int32_t epoch_ = 0;
  int64_t dropped_ = 0;
  std::vector<TraceSpan> spans_;
};

class PhaseClock {
 public:
  virtual ~PhaseClock() = default;
  void begin(Phase phase, kernels::Stream stream);
  void end(Phase phase, kernels::Stream stream);
  // Milliseconds per phase, and the spmm and gemm phases' work, since the last take(); starts over.
  PhaseTimes take();
  // Reports every interval to `recorder` from now on (nullptr: stop). False when this clock cannot (the CUDA
  // clock's intervals are GPU events, not host times).
  virtual bool set_trace(TraceRecorder* /*recorder*/) { return false; }

 protected:
  virtual void begin_interval(Phase phase, kernels::Stream stream) = 0;
  virtual void end_interval(Phase phase, kernels::Stream stream) = 0;
  virtual PhaseTimes take_times() = 0;  // the milliseconds alone

 private:
  double bytes_at_begin_ = 0, flops_at_begin_ = 0;  // the counters when the open spmm / gemm interval began
  double spmm_bytes_ = 0, gemm_flops_ = 0;
};

// The clock for work on `device`. Device::cuda without the CUDA backend or a usable GPU is a UserError.
std::unique_ptr<PhaseClock> make_phase_clock(Device device);

// begin() at construction, end() at destruction.
class PhaseScope {
 public:
  PhaseScope(PhaseClock& clock, Phase phase, kernels::Stream stream) : clock_(clock), phase_(phase), stream_(stream) {
    clock_.begin(phase_, stream_);
  }
  ~PhaseScope() { clock_.end(phase_, stream_); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock& clock_;
  Phase phase_;
  kernels::Stream stream_;
};

// A named range for profilers for the lifetime of the object: an NVTX range (Nsight Systems) when the CUDA
// backend is loaded, nothing otherwise (it never loads the backend). Costs nothing measurable when no
// profiler is attached.
class TraceRange {
 public:
  explicit TraceRange(const char* name);
  ~TraceRange();
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;

 private:
  alignas(8) unsigned char range_[8];  // a kernels::device::NvtxRange (no allocation)
};

}  // namespace halogen::nn
