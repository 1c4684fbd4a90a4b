#include "nn/profile.h"

#include <new>

#include "core/error.h"
#include "core/timer.h"
#include "kernels/device.h"
#include "nn/event_phase_clock.h"

namespace halogen::nn {
namespace {

// Host wall clock: CPU kernels have finished when they return, so the interval is the work.
class WallPhaseClock final : public PhaseClock {
 public:
  void begin_interval(Phase phase, kernels::Stream) override {
    const int p = static_cast<int>(phase);
    HALOGEN_ASSERT(started_at_[p] < 0, "phase %d begun twice", p);
    started_at_[p] = wall_seconds();
  }
  void end_interval(Phase phase, kernels::Stream) override {
    const int p = static_cast<int>(phase);
    HALOGEN_ASSERT(started_at_[p] >= 0, "phase %d ended without begin", p);
    const double now = wall_seconds();
    times_[phase] += 1e3 * (now - started_at_[p]);
    if (recorder_ != nullptr) recorder_->record(phase, started_at_[p], now);
    started_at_[p] = -1;
  }
  bool set_trace(TraceRecorder* recorder) override {
    recorder_ = recorder;
    return true;
  }
  PhaseTimes take_times() override {
    PhaseTimes taken = times_;
    times_.reset();
    return taken;
  }

 private:
  PhaseTimes times_;
  double started_at_[kNumPhases] = {-1, -1, -1, -1, -1, -1, -1, -1};
  TraceRecorder* recorder_ = nullptr;
};

}  // namespace

void PhaseClock::begin(Phase phase, kernels::Stream stream) {
  if (phase == Phase::spmm) bytes_at_begin_ = kernels::work_count().bytes;
  if (phase == Phase::gemm) flops_at_begin_ = kernels::work_count().flops;
  begin_interval(phase, stream);
}

void PhaseClock::end(Phase phase, kernels::Stream stream) {
  end_interval(phase, stream);
  if (phase == Phase::spmm) spmm_bytes_ += kernels::work_count().bytes - bytes_at_begin_;
  if (phase == Phase::gemm) gemm_flops_ += kernels::work_count().flops - flops_at_begin_;
}

PhaseTimes PhaseClock::take() {
  PhaseTimes taken = take_times();
  taken.spmm_bytes = spmm_bytes_;
  taken.gemm_flops = gemm_flops_;
  spmm_bytes_ = gemm_flops_ = 0;
  return taken;
}

double& PhaseTimes::operator[](Phase phase) {
  switch (phase) {
    case Phase::spmm: return spmm_ms;
    case Phase::gemm: return gemm_ms;
    case Phase::elementwise: return elementwise_ms;
    case Phase::halo_exposed: return halo_exposed_ms;
    case Phase::halo_total: return halo_total_ms;
    case Phase::allreduce: return allreduce_ms;
    case Phase::optimizer: return optimizer_ms;
    case Phase::allreduce_exposed: return allreduce_exposed_ms;
  }
  HALOGEN_ASSERT(false, "unknown phase %d", static_cast<int>(phase));
  return spmm_ms;
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::spmm: return "spmm";
    case Phase::gemm: return "gemm";
    case Phase::elementwise: return "elementwise";
    case Phase::halo_exposed: return "halo post/wait";
    case Phase::halo_total: return "halo in flight";
    case Phase::allreduce: return "allreduce in flight";
    case Phase::optimizer: return "optimizer";
    case Phase::allreduce_exposed: return "allreduce wait";
  }
  return "?";
}

TraceRecorder::TraceRecorder(int64_t capacity) : capacity_(capacity) {
  HALOGEN_ASSERT(capacity >= 0);
  spans_.reserve(static_cast<size_t>(capacity));
}

std::unique_ptr<PhaseClock> make_phase_clock(Device device) {
  if (device == Device::cpu) return std::make_unique<WallPhaseClock>();
  kernels::device::require_backend("device cuda");
  HALOGEN_USER_CHECK(kernels::device::usable_device_count() > 0, "device cuda: no usable CUDA device");
  return make_event_phase_clock();
}

using kernels::device::NvtxRange;
static_assert(sizeof(NvtxRange) <= 8 && alignof(NvtxRange) <= 8, "TraceRange::range_ is too small");
TraceRange::TraceRange(const char* name) { new (range_) NvtxRange(name); }
TraceRange::~TraceRange() { std::launder(reinterpret_cast<NvtxRange*>(range_))->~NvtxRange(); }

}  // namespace halogen::nn
