// GIN's learnable-epsilon ops on the GPU (kernels/ops.h, "GIN"). eps and the result stay on the device: no
// host synchronisation. The arithmetic is kernels/cpu/gin.cpp's.
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void one_plus_eps_add_kernel(const float* x, int64_t x_stride, const float* eps, float* out,
                                        int64_t out_stride, int64_t rows,
                                        int64_t cols) {  // x, out: (rows, cols)
  const float scale = 1.0f + eps[0];
  const int64_t count = rows * cols;
  for (int64_t i = grid_first(); i < count; i += grid_step()) {
    const int64_t r = i / cols, c = i % cols;
    out[r * out_stride + c] += __fmul_rn(scale, x[r * x_stride + c]);
  }
}

// partials[blockIdx.x] = this block's sum of a * b (double); finish_sum then adds the blocks in a fixed order
// and result[0] += the total rounded once to float (no float atomics: bitwise repeatable).
__global__ void dot_add_kernel(const float* a, int64_t a_stride, const float* b, int64_t b_stride,
                               int64_t rows, int64_t cols,
                               double* partials) {  // a, b: (rows, cols); partials: (gridDim.x)
  double sum = 0.0;
  const int64_t count = rows * cols;
  for (int64_t i = grid_first(); i < count; i += grid_step()) {
    const int64_t r = i / cols, c = i % cols;
    sum += double(a[r * a_stride + c]) * double(b[r * b_stride + c]);
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

}  // namespace

void one_plus_eps_add(Matrix<const float> x, Span<const float> eps, Matrix<float> out, Stream stream) {
  detail::require_device(x, "one_plus_eps_add x");
  detail::require_device(out, "one_plus_eps_add out");
  detail::require_same_shape(out, x, "one_plus_eps_add out", "x");
  HALOGEN_ASSERT(eps.size == 1 && eps.device == Device::cuda, "eps must be one device float");
  if (x.size() == 0) return;
  one_plus_eps_add_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      x.data, detail::row_stride(x), eps.data, out.data, detail::row_stride(out), x.rows, x.cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void dot_add(Matrix<const float> a, Matrix<const float> b, Span<float> result, Stream stream) {
  detail::require_device(a, "dot_add a");
  detail::require_device(b, "dot_add b");
  detail::require_same_shape(b, a, "dot_add b", "a");
  HALOGEN_ASSERT(result.size == 1 && result.device == Device::cuda, "result must be one device float");
  if (a.size() == 0) return;
  // Asynchronous (eps stays on the device): its own partials, never those of the synchronising scalar ops.
  double* partials = thread_context().async_sum_partials;
  const unsigned blocks = sum_blocks(a.size(), kThreads);
  dot_add_kernel<<<blocks, kThreads, 0, to_cuda(stream)>>>(
      a.data, detail::row_stride(a), b.data, detail::row_stride(b), a.rows, a.cols, partials);
  HALOGEN_CUDA_CHECK_LAUNCH();
  finish_sum(partials, blocks, result.data, true, to_cuda(stream));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

}  // namespace halogen::kernels::cuda
