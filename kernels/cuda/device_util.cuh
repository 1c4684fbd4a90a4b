#pragma once
// Device-code helpers of kernels/cuda: grid-stride loop bounds and warp/block reductions.
#include <cuda_runtime.h>

#include <cstdint>

namespace halogen::kernels::cuda {

// Grid-stride loops: for (int64_t i = grid_first(); i < n; i += grid_step()).
__device__ __forceinline__ int64_t grid_first() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_step() { return int64_t(gridDim.x) * blockDim.x; }

template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

template <typename T>
__device__ __forceinline__ T warp_max(T value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = other > value ? other : value;
  }
  return value;
}

// Sum of `value` over the block; the result is valid in thread 0 only. blockDim.x must be a multiple of 32
// and at most 1024. Every thread of the block must call it.
template <typename T>
__device__ T block_sum(T value) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  value = warp_sum(value);
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  const int warps = blockDim.x / 32;
  value = (threadIdx.x < warps) ? partial[lane] : T(0);
  __syncthreads();  // every read of `partial` is done before a second block_sum<T> of this kernel writes it
  if (warp == 0) value = warp_sum(value);
  return value;
}

}  // namespace halogen::kernels::cuda
