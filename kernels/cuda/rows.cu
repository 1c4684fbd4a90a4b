// Row gather (pack rows to send) and row scatter-add (add partial sums received for owned rows) on the GPU.
// Indices are not range-checked here (that would need a host synchronisation per call); the halo plan is
// validated when a partition file is read.
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void gather_rows_kernel(const float* x, int64_t x_stride,           // x: (n, width)
                                   const int32_t* idx, int64_t count,          // idx: (count)
                                   int64_t width, float* out, int64_t out_stride) {  // out: (count, width)
  for (ElementCursor e(grid_first(), grid_step(), width); e.row < count; e.advance()) {
    const int64_t i = e.row, c = e.col;
    out[i * out_stride + c] = x[static_cast<int64_t>(idx[i]) * x_stride + c];
  }
}

__global__ void scale_rows_kernel(const float* scale, int64_t rows, int64_t width, float* x, int64_t x_stride) {
  for (ElementCursor e(grid_first(), grid_step(), width); e.row < rows; e.advance())
    x[e.row * x_stride + e.col] = scale[e.row] * x[e.row * x_stride + e.col];
}

__global__ void scatter_add_rows_kernel(const float* x, int64_t x_stride,    // x: (count, width)
                                        const int32_t* idx, int64_t count,   // idx: (count)
                                        int64_t width, float* out, int64_t out_stride) {  // out: (n, width)
  for (ElementCursor e(grid_first(), grid_step(), width); e.row < count; e.advance()) {
    const int64_t i = e.row, c = e.col;
    atomicAdd(out + static_cast<int64_t>(idx[i]) * out_stride + c, x[i * x_stride + c]);
  }
}

}  // namespace

void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream) {
  detail::require_device(x, "gather_rows x");
  detail::require_device(idx, "gather_rows idx");
  detail::require_device(out, "gather_rows out");
  HALOGEN_ASSERT(out.rows == idx.size && out.cols == x.cols, "gather of %lld rows of width %lld into (%lld, %lld)",
                 (long long)idx.size, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (out.size() == 0) return;
  HALOGEN_ASSERT(x.rows > 0, "gather of %lld rows from an empty x", (long long)idx.size);
  gather_rows_kernel<<<grid_for(out.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      x.data, detail::row_stride(x), idx.data, idx.size, x.cols, out.data, detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void scale_rows(Span<const float> scale, Matrix<float> x, Stream stream) {
  detail::require_device(scale, "scale_rows scale");
  detail::require_device(x, "scale_rows x");
  HALOGEN_ASSERT(scale.size == x.rows, "%lld row factors for %lld rows", (long long)scale.size, (long long)x.rows);
  if (x.size() == 0) return;
  scale_rows_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(scale.data, x.rows, x.cols, x.data,
                                                                                   detail::row_stride(x));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream) {
  detail::require_device(x, "scatter_add_rows x");
  detail::require_device(idx, "scatter_add_rows idx");
  detail::require_device(out, "scatter_add_rows out");
  HALOGEN_ASSERT(x.rows == idx.size && out.cols == x.cols, "scatter of (%lld, %lld) by %lld indices into width %lld",
                 (long long)x.rows, (long long)x.cols, (long long)idx.size, (long long)out.cols);
  if (x.size() == 0) return;
  HALOGEN_ASSERT(out.rows > 0, "scatter of %lld rows into an empty out", (long long)idx.size);
  scatter_add_rows_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      x.data, detail::row_stride(x), idx.data, idx.size, x.cols, out.data, detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

}  // namespace halogen::kernels::cuda
