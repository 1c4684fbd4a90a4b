// PhaseClock on CUDA events (kernels::device::PhaseTimer).
#include "nn/event_phase_clock.h"

#include <array>

#include "kernels/device.h"

namespace halogen::nn {
namespace {

class EventPhaseClock final : public PhaseClock {
 public:
  // Events are created here (before the first epoch); a phase with more intervals per epoch than the initial
  // capacity grows its pool once, in the first epoch.
  EventPhaseClock() {
    for (auto& timer : timers_) timer = std::make_unique<kernels::device::PhaseTimer>(32);
  }
  void begin_interval(Phase phase, kernels::Stream stream) override { timers_[static_cast<int>(phase)]->begin(stream); }
  void end_interval(Phase phase, kernels::Stream stream) override { timers_[static_cast<int>(phase)]->end(stream); }
  PhaseTimes take_times() override {
    PhaseTimes taken;
    for (int p = 0; p < kNumPhases; ++p) taken[static_cast<Phase>(p)] = timers_[p]->take_ms();
    return taken;
  }

 private:
  std::array<std::unique_ptr<kernels::device::PhaseTimer>, kNumPhases> timers_;
};

}  // namespace

std::unique_ptr<PhaseClock> make_event_phase_clock() { return std::make_unique<EventPhaseClock>(); }

}  // namespace halogen::nn
