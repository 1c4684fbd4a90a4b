#include "kernels/cuda/profiling.h"

#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "core/check.h"

namespace halogen::cuda {
namespace {
cudaEvent_t event(void* handle) { return static_cast<cudaEvent_t>(handle); }
}  // namespace

PhaseTimer::PhaseTimer(int capacity) {
  HALOGEN_ASSERT(capacity >= 1);
  for (int i = 0; i < capacity; ++i) grow();
}

PhaseTimer::~PhaseTimer() {
  for (size_t i = 0; i < begin_events_.size(); ++i) {
    CUDA_CHECK(cudaEventDestroy(event(begin_events_[i])));
    CUDA_CHECK(cudaEventDestroy(event(end_events_[i])));
  }
}

void PhaseTimer::grow() {
  cudaEvent_t begin_event, end_event;
  CUDA_CHECK(cudaEventCreate(&begin_event));
  CUDA_CHECK(cudaEventCreate(&end_event));
  begin_events_.push_back(begin_event);
  end_events_.push_back(end_event);
}

void PhaseTimer::begin(void* stream) {
  HALOGEN_ASSERT(!open_, "PhaseTimer::begin twice without end");
  if (used_ == static_cast<int>(begin_events_.size())) grow();
  CUDA_CHECK(cudaEventRecord(event(begin_events_[used_]), static_cast<cudaStream_t>(stream)));
  open_ = true;
}

void PhaseTimer::end(void* stream) {
  HALOGEN_ASSERT(open_, "PhaseTimer::end without begin");
  CUDA_CHECK(cudaEventRecord(event(end_events_[used_]), static_cast<cudaStream_t>(stream)));
  ++used_;
  open_ = false;
}

double PhaseTimer::take_ms() {
  HALOGEN_ASSERT(!open_, "PhaseTimer::take_ms with an open interval");
  double total = 0.0;
  for (int i = 0; i < used_; ++i) {
    CUDA_CHECK(cudaEventSynchronize(event(end_events_[i])));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, event(begin_events_[i]), event(end_events_[i])));
    total += ms;
  }
  used_ = 0;
  return total;
}

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace halogen::cuda
