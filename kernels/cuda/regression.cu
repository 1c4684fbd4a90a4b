// Squared error of a prediction against targets on the GPU (kernels/cpu/regression.cpp is the reference): the
// per-element arithmetic is the CPU's (difference and square in double); only the order of the additions
// differs (a block tree, then the blocks' sums added in a fixed order: bitwise repeatable).
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void squared_error_kernel(const float* y, int64_t y_stride,            // y: (n, f)
                                     const float* target, int64_t target_stride,  // target: (n, f)
                                     int64_t n, int64_t f, double grad_scale,
                                     float* grad, int64_t grad_stride,             // grad: (n, f) or null
                                     double* partials) {  // (gridDim.x)
  double sum = 0.0;
  for (ElementCursor at(grid_first(), grid_step(), f); at.row < n; at.advance()) {
    const int64_t r = at.row, c = at.col;
    const double e = static_cast<double>(y[r * y_stride + c]) - static_cast<double>(target[r * target_stride + c]);
    sum += e * e;
    if (grad != nullptr) grad[r * grad_stride + c] = static_cast<float>(grad_scale * e);
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

}  // namespace

double squared_error(Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y,
                     Stream stream) {
  detail::require_device(y, "y");
  detail::require_device(target, "target");
  detail::require_same_shape(y, target, "y", "target");
  const bool want_grad = grad_y.rows > 0;
  if (want_grad) {
    detail::require_device(grad_y, "grad_y");
    detail::require_same_shape(y, grad_y, "y", "grad_y");
  }
  if (y.size() == 0) return 0.0;
  const cudaStream_t cuda_stream = to_cuda(stream);
  ThreadContext& context = thread_context();
  const unsigned blocks = sum_blocks(y.size(), kThreads);
  squared_error_kernel<<<blocks, kThreads, 0, cuda_stream>>>(
      y.data, detail::row_stride(y), target.data, detail::row_stride(target), y.rows, y.cols, grad_scale,
      want_grad ? grad_y.data : nullptr, want_grad ? detail::row_stride(grad_y) : 0, context.sum_partials);
  HALOGEN_CUDA_CHECK_LAUNCH();
  finish_sum(context.sum_partials, blocks, context.scratch_double, false, cuda_stream);
  HALOGEN_CUDA_CHECK_LAUNCH();
  double sum = 0.0;
  CUDA_CHECK(cudaMemcpyAsync(&sum, context.scratch_double, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return sum;
}

}  // namespace halogen::kernels::cuda
