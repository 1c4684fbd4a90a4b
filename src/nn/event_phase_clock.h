#pragma once
// The CUDA PhaseClock (nn/profile.h): one kernels::device::PhaseTimer per phase, events recorded on the
// caller's stream. Use make_phase_clock(Device::cuda); needs the CUDA backend and an initialised device.
#include <memory>

#include "nn/profile.h"

namespace halogen::nn {

std::unique_ptr<PhaseClock> make_event_phase_clock();

}  // namespace halogen::nn
