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

namespace halogen::kernels::cuda {

// ---- deterministic sums (docs/gpu.md: every reduction runs in a fixed order, so a run repeats bit for bit) ------
// A scalar sum over a grid-stride loop is done in two passes instead of one atomic per block: each block writes
// its block_sum to partials[blockIdx.x], then finish_sum_kernel (one block) adds the partials in a fixed order.
// The order depends only on the grid size, which the launchers derive from the input size alone (at most
// kMaxSumBlocks blocks), never on which block finished first.
constexpr int kMaxSumBlocks = 1024;
constexpr int kFinishThreads = 1024;

// out[0] = (accumulate ? out[0] : 0) + sum of partials[0, count), in a fixed order: thread t adds the partials
// t, t + 1024, ... (at most one when count <= kMaxSumBlocks), then block_sum's fixed tree. Launch <<<1, 1024>>>.
template <typename Out>
__global__ void finish_sum_kernel(const double* partials, int count, Out* out, bool accumulate) {
  double sum = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) sum += partials[i];
  sum = block_sum(sum);
  // The total is rounded to Out once, then added (as kernels/cpu/gin.cpp's dot_add does: result += float(total)).
  if (threadIdx.x == 0) out[0] = accumulate ? out[0] + static_cast<Out>(sum) : static_cast<Out>(sum);
}

}  // namespace halogen::kernels::cuda

namespace halogen::kernels::cuda {

// Blocks of a two-pass sum over `count` items with `per_block` items per block and pass: a function of the
// size alone (grid-stride loops cover the rest).
inline unsigned sum_blocks(int64_t count, int64_t per_block) {
  const int64_t blocks = (count + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxSumBlocks ? kMaxSumBlocks : blocks));
}

// The second pass: out[0] (+)= the sum of partials[0, blocks) on `stream` (see finish_sum_kernel).
template <typename Out>
inline void finish_sum(const double* partials, unsigned blocks, Out* out, bool accumulate, cudaStream_t stream) {
  finish_sum_kernel<Out><<<1, kFinishThreads, 0, stream>>>(partials, static_cast<int>(blocks), out, accumulate);
}

}  // namespace halogen::kernels::cuda
