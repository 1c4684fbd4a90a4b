#pragma once
// CUDA events and NVTX ranges of the backend, behind kernels::device::PhaseTimer and NvtxRange
// (kernels/device.h), which are what the rest of the program uses. Internal to the CUDA backend library.
#include "kernels/ops.h"

namespace halogen::cuda {

void* create_event();  // cudaEvent_t with timing, on the current device
void destroy_event(void* event);
void record_event(void* event, kernels::Stream stream);
// Milliseconds between two recorded events; waits for `end` on the host.
float elapsed_ms(void* begin, void* end);

void push_range(const char* name);  // nvtxRangePushA
void pop_range();                   // nvtxRangePop

}  // namespace halogen::cuda
