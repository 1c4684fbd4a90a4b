#pragma once
// Per-(host thread, device) CUDA context of the kernels: the cuBLAS and cuSPARSE handles and a small device
// scratch area for scalar reductions. Internal to kernels/cuda (includes CUDA headers).
//
// Handles are created on first use by a thread on a device and live until the process ends: destroying them
// from thread-exit or static destructors can run after the CUDA runtime has shut down, so they are
// deliberately never destroyed (the driver reclaims them at exit).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cstdint>

#include "core/check.h"
#include "kernels/ops.h"

namespace halogen::kernels::cuda {

struct ThreadContext {
  int device = -1;
  cublasHandle_t cublas = nullptr;
  cusparseHandle_t cusparse = nullptr;
  bool cublas_tf32 = false;  // the math mode last set on `cublas` (CUBLAS_DEFAULT_MATH when false)
  // Scalar reduction scratch (device memory): two doubles and two 64-bit counters. Every op that uses it
  // synchronises its stream before returning, so one scratch per (thread, device) is never in use twice.
  double* scratch_double = nullptr;                // (2)
  unsigned long long* scratch_count = nullptr;      // (2)
  // Per-block partial sums of the deterministic two-pass reductions (device_util.cuh, kMaxSumBlocks each): one
  // area for the synchronising scalar ops above, one for dot_add (which stays asynchronous on its stream), so
  // that the two never share partials.
  double* sum_partials = nullptr;                   // (kMaxSumBlocks)
  double* async_sum_partials = nullptr;             // (kMaxSumBlocks)
  // Row-chunk partials of bias_backward's two-pass column sums (epilogue.cu): kBiasPartialFloats floats; a
  // product with more columns uses fewer chunks (one chunk, no partials, for cols > kBiasPartialFloats / 2).
  float* bias_partials = nullptr;
  // dot_add and bias_backward use their partials without synchronising: two calls are ordered only when they
  // are on one stream. The program issues both on its one compute stream (nn/compute_stream.h) per thread.
};
constexpr int64_t kBiasPartialFloats = int64_t(1) << 19;  // 2 MiB

// The context of the calling thread on the current device (cudaGetDevice), created on first use.
ThreadContext& thread_context();

// Drops the cached cuSPARSE state of every matrix whose indptr, indices or values array starts at `pointer`
// (spmm.cu). Called by the device-memory release hook (device.cu) before the memory is freed, so that a new
// matrix allocated at a reused address never meets a stale cache entry, even without release_sparse_cache().
void forget_sparse_matrices_using(const void* pointer);

inline cudaStream_t to_cuda(Stream stream) { return static_cast<cudaStream_t>(stream); }

// Grid size for a grid-stride loop over `count` items with `threads` per block (at least 1 block, at most
// a few waves so that the loop does the rest).
inline unsigned grid_for(int64_t count, int threads) {
  const int64_t blocks = (count + threads - 1) / threads;
  constexpr int64_t kMaxBlocks = 65535LL * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// Checks the launch that just happened (configuration errors surface here; execution errors at the next
// synchronising call).
#define HALOGEN_CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

}  // namespace halogen::kernels::cuda
