#include "nn/profile.h"

#include <new>

#include "core/error.h"
#include "core/timer.h"
#include "nn/event_phase_clock.h"

#ifdef HALOGEN_HAVE_CUDA
#include "kernels/cuda/profiling.h"
#endif

namespace halogen::nn {
namespace {

// Host wall clock: CPU kernels have finished when they return, so the interval is the work.
class WallPhaseClock final : public PhaseClock {
 public:
  void begin(Phase phase, kernels::Stream) override {
    const int p = static_cast<int>(phase);
    HALOGEN_ASSERT(started_at_[p] < 0, "phase %d begun twice", p);
    started_at_[p] = wall_seconds();
  }
  void end(Phase phase, kernels::Stream) override {
    const int p = static_cast<int>(phase);
    HALOGEN_ASSERT(started_at_[p] >= 0, "phase %d ended without begin", p);
    times_[phase] += 1e3 * (wall_seconds() - started_at_[p]);
    started_at_[p] = -1;
  }
  PhaseTimes take() override {
    PhaseTimes taken = times_;
    times_.reset();
    return taken;
  }

 private:
  PhaseTimes times_;
  double started_at_[kNumPhases] = {-1, -1, -1, -1, -1, -1, -1, -1};
};

}  // namespace

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

std::unique_ptr<PhaseClock> make_phase_clock(Device device) {
  if (device == Device::cpu) return std::make_unique<WallPhaseClock>();
#ifdef HALOGEN_HAVE_CUDA
  return make_event_phase_clock();
#else
  throw UserError("device cuda: this build has no CUDA backend (configure with -DHALOGEN_CUDA=ON)");
#endif
}

#ifdef HALOGEN_HAVE_CUDA
static_assert(sizeof(cuda::NvtxRange) <= 8 && alignof(cuda::NvtxRange) <= 8, "TraceRange::range_ is too small");
TraceRange::TraceRange(const char* name) { new (range_) cuda::NvtxRange(name); }
TraceRange::~TraceRange() { std::launder(reinterpret_cast<cuda::NvtxRange*>(range_))->~NvtxRange(); }
#else
TraceRange::TraceRange(const char*) {}
TraceRange::~TraceRange() {}
#endif

}  // namespace halogen::nn
