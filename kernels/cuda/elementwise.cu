// fill, axpy, sum_squares on device spans.
#include <cmath>
#include <limits>

#include "kernels/cuda/context.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/device_util.cuh"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void fill_kernel(float* x, int64_t n, float value) {  // x: (n)
  for (int64_t i = grid_first(); i < n; i += grid_step())
    x[i] = value;
}

__global__ void axpy_kernel(float alpha, const float* x, float* y, int64_t n) {  // x, y: (n)
  for (int64_t i = grid_first(); i < n; i += grid_step())
    y[i] += alpha * x[i];
}

// partials[blockIdx.x] = this block's sum of x^2 (double; finish_sum adds the blocks in a fixed order);
// counts[0] += number of non-finite elements (an integer atomic: exact in any order).
__global__ void sum_squares_kernel(const float* x, int64_t n, double* partials, unsigned long long* counts) {
  double sum = 0.0;
  unsigned long long non_finite = 0;
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const float value = x[i];
    if (!isfinite(value)) ++non_finite;
    sum += double(value) * double(value);
  }
  sum = block_sum(sum);
  non_finite = block_sum(non_finite);
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = sum;
    if (non_finite) atomicAdd(counts, non_finite);
  }
}

}  // namespace

void fill(Span<float> x, float value, Stream stream) {
  if (x.size == 0) return;
  HALOGEN_ASSERT(x.device == Device::cuda);
  fill_kernel<<<grid_for(x.size, kThreads), kThreads, 0, to_cuda(stream)>>>(x.data, x.size, value);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void axpy(float alpha, Span<const float> x, Span<float> y, Stream stream) {
  HALOGEN_ASSERT(x.size == y.size, "%lld vs %lld", (long long)x.size, (long long)y.size);
  if (x.size == 0) return;
  HALOGEN_ASSERT(x.device == Device::cuda && y.device == Device::cuda);
  axpy_kernel<<<grid_for(x.size, kThreads), kThreads, 0, to_cuda(stream)>>>(alpha, x.data, y.data, x.size);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

double sum_squares(Span<const float> x, Stream stream) {
  if (x.size == 0) return 0.0;
  HALOGEN_ASSERT(x.device == Device::cuda);
  ThreadContext& context = thread_context();
  const cudaStream_t cuda_stream = to_cuda(stream);
  CUDA_CHECK(cudaMemsetAsync(context.scratch_count, 0, sizeof(unsigned long long), cuda_stream));
  const unsigned blocks = sum_blocks(x.size, kThreads);
  sum_squares_kernel<<<blocks, kThreads, 0, cuda_stream>>>(x.data, x.size, context.sum_partials,
                                                           context.scratch_count);
  HALOGEN_CUDA_CHECK_LAUNCH();
  finish_sum(context.sum_partials, blocks, context.scratch_double, false, cuda_stream);
  HALOGEN_CUDA_CHECK_LAUNCH();
  double sum = 0.0;
  unsigned long long non_finite = 0;
  CUDA_CHECK(cudaMemcpyAsync(&sum, context.scratch_double, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaMemcpyAsync(&non_finite, context.scratch_count, sizeof(non_finite), cudaMemcpyDeviceToHost,
                             cuda_stream));
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return non_finite ? std::numeric_limits<double>::quiet_NaN() : sum;
}

}  // namespace halogen::kernels::cuda
