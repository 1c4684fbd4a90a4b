#include "kernels/cuda/profiling.h"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "core/check.h"

namespace halogen::cuda {
namespace {
cudaEvent_t event(void* handle) { return static_cast<cudaEvent_t>(handle); }
}  // namespace

void* create_event() {
  cudaEvent_t created;
  CUDA_CHECK(cudaEventCreate(&created));
  return created;
}

void destroy_event(void* handle) { CUDA_CHECK(cudaEventDestroy(event(handle))); }

void record_event(void* handle, kernels::Stream stream) {
  CUDA_CHECK(cudaEventRecord(event(handle), static_cast<cudaStream_t>(stream)));
}

float elapsed_ms(void* begin, void* end) {
  CUDA_CHECK(cudaEventSynchronize(event(end)));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, event(begin), event(end)));
  return ms;
}

void push_range(const char* name) { nvtxRangePushA(name); }
void pop_range() { nvtxRangePop(); }

}  // namespace halogen::cuda
