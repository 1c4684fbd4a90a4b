#pragma once
// The CUDA PhaseClock (nn/profile.h): one cuda::PhaseTimer per phase, events recorded on the caller's stream.
// Defined in CUDA builds only (event_phase_clock.cpp); use make_phase_clock(Device::cuda).
#include <memory>

#include "nn/profile.h"

namespace halogen::nn {

#ifdef HALOGEN_HAVE_CUDA
std::unique_ptr<PhaseClock> make_event_phase_clock();
#endif

}  // namespace halogen::nn
