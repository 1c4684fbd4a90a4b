// The BF16 ops on the GPU (kernels/ops.h "BF16 storage"): conversions, halo row packing and the SpMM with
// BF16 rows of x; gemm_bf16 is in gemm.cu (cublasGemmEx).
//
// spmm_bf16 is our own kernel rather than cuSPARSE's: cusparseSpMM takes BF16 B only with BF16 values of A,
// and the normalised adjacency's values (1/sqrt(d_i d_j)) would lose 16 bits. Here A stays FP32 and each row
// is summed in index order with separate multiply and add (no FMA contraction), like the CPU kernel, so the
// two backends agree bit for bit. One warp per output row, each lane a set of columns; the gathered rows of x
// are half the bytes of FP32, which is what bounds the kernel.
// Conversion rounds with integer arithmetic, the CPU's formula (core/bf16.h), so NaN payloads and ties round
// identically on both backends.
#include <cstdint>

#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint16_t round_bits(float value) {
  const uint32_t u = __float_as_uint(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float widen(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}

__global__ void convert_to_bf16_kernel(const float* x, int64_t x_stride, int64_t rows,
                                       int64_t cols,                         // x: (rows, cols)
                                       uint16_t* out, int64_t out_stride) {  // out: (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance())
    out[e.row * out_stride + e.col] = round_bits(x[e.row * x_stride + e.col]);
}

__global__ void scale_round_bf16_kernel(const float* scale, const float* x, int64_t x_stride, int64_t rows,
                                        int64_t cols,                         // x: (rows, cols)
                                        uint16_t* out, int64_t out_stride) {  // out: (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance())
    out[e.row * out_stride + e.col] = round_bits(__fmul_rn(x[e.row * x_stride + e.col], scale[e.row]));
}

__global__ void convert_from_bf16_kernel(const uint16_t* x, int64_t x_stride, int64_t rows,
                                         int64_t cols,                      // x
                                         float* out, int64_t out_stride) {  // out
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance())
    out[e.row * out_stride + e.col] = widen(x[e.row * x_stride + e.col]);
}

__global__ void gather_rows_bf16_kernel(const uint16_t* x, int64_t x_stride,  // x: (n, width)
                                        const int32_t* idx, int64_t count,    // idx: (count)
                                        int64_t width, uint16_t* out,
                                        int64_t out_stride) {  // out: (count, width)
  for (ElementCursor e(grid_first(), grid_step(), width); e.row < count; e.advance())
    out[e.row * out_stride + e.col] = x[static_cast<int64_t>(idx[e.row]) * x_stride + e.col];
}

__global__ void scatter_add_rows_bf16_kernel(const uint16_t* x, int64_t x_stride,  // x: (count, width)
                                             const int32_t* idx, int64_t count,    // idx: (count)
                                             int64_t width, float* out,
                                             int64_t out_stride) {  // out: (n, width)
  for (ElementCursor e(grid_first(), grid_step(), width); e.row < count; e.advance())
    atomicAdd(out + static_cast<int64_t>(idx[e.row]) * out_stride + e.col,
              widen(x[e.row * x_stride + e.col]));
}

// One warp per row; lane l sums columns l, l + 32, ... over the row's nonzeros in index order.
__global__ void spmm_bf16_kernel(int64_t rows, const int64_t* indptr, const int32_t* indices,  // a: CSR
                                 const float* values,                                 // (nnz) or null
                                 const uint16_t* x, int64_t x_stride, int64_t width,  // x: (cols, width)
                                 float* out, int64_t out_stride, bool accumulate) {   // out: (rows, width)
  const int64_t warps = (int64_t(gridDim.x) * blockDim.x) / 32;
  const int lane = threadIdx.x % 32;
  for (int64_t r = grid_first() / 32; r < rows; r += warps) {
    const int64_t begin = indptr[r], end = indptr[r + 1];
    for (int64_t c = lane; c < width; c += 32) {
      float sum = 0.0f;
      for (int64_t k = begin; k < end; ++k) {
        const float v = widen(x[static_cast<int64_t>(indices[k]) * x_stride + c]);
        sum = __fadd_rn(sum, values != nullptr ? __fmul_rn(values[k], v) : v);
      }
      float* target = out + r * out_stride + c;
      *target = accumulate ? __fadd_rn(*target, sum) : sum;
    }
  }
}

const uint16_t* bits(const Bf16* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* bits(Bf16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

}  // namespace

void convert_to_bf16(Matrix<const float> x, Matrix<Bf16> out, Stream stream) {
  detail::require_device(x, "convert_to_bf16 x");
  detail::require_device(out, "convert_to_bf16 out");
  HALOGEN_ASSERT(x.rows == out.rows && x.cols == out.cols, "(%lld, %lld) into (%lld, %lld)",
                 (long long)x.rows, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (x.size() == 0) return;
  convert_to_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      x.data, detail::row_stride(x), x.rows, x.cols, bits(out.data), detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void scale_round_bf16(Span<const float> scale, Matrix<const float> x, Matrix<Bf16> out, Stream stream) {
  detail::require_device(scale, "scale_round_bf16 scale");
  detail::require_device(x, "scale_round_bf16 x");
  detail::require_device(out, "scale_round_bf16 out");
  HALOGEN_ASSERT(x.rows == out.rows && x.cols == out.cols && scale.size == x.rows,
                 "scale_round_bf16: (%lld, %lld) into (%lld, %lld) with %lld scales", (long long)x.rows,
                 (long long)x.cols, (long long)out.rows, (long long)out.cols, (long long)scale.size);
  if (x.size() == 0) return;
  scale_round_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      scale.data, x.data, detail::row_stride(x), x.rows, x.cols, bits(out.data), detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void convert_from_bf16(Matrix<const Bf16> x, Matrix<float> out, Stream stream) {
  detail::require_device(x, "convert_from_bf16 x");
  detail::require_device(out, "convert_from_bf16 out");
  HALOGEN_ASSERT(x.rows == out.rows && x.cols == out.cols, "(%lld, %lld) into (%lld, %lld)",
                 (long long)x.rows, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (x.size() == 0) return;
  convert_from_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      bits(x.data), detail::row_stride(x), x.rows, x.cols, out.data, detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void gather_rows_bf16(Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<Bf16> out, Stream stream) {
  detail::require_device(x, "gather_rows_bf16 x");
  detail::require_device(idx, "gather_rows_bf16 idx");
  detail::require_device(out, "gather_rows_bf16 out");
  HALOGEN_ASSERT(out.rows == idx.size && out.cols == x.cols,
                 "gather of %lld rows of width %lld into (%lld, %lld)", (long long)idx.size,
                 (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (out.size() == 0) return;
  gather_rows_bf16_kernel<<<grid_for(out.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      bits(x.data), detail::row_stride(x), idx.data, idx.size, x.cols, bits(out.data),
      detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void scatter_add_rows_bf16(Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<float> out, Stream stream) {
  detail::require_device(x, "scatter_add_rows_bf16 x");
  detail::require_device(idx, "scatter_add_rows_bf16 idx");
  detail::require_device(out, "scatter_add_rows_bf16 out");
  HALOGEN_ASSERT(x.rows == idx.size && out.cols == x.cols,
                 "scatter of (%lld, %lld) by %lld indices into width %lld", (long long)x.rows,
                 (long long)x.cols, (long long)idx.size, (long long)out.cols);
  if (x.size() == 0) return;
  scatter_add_rows_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      bits(x.data), detail::row_stride(x), idx.data, idx.size, x.cols, out.data, detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void spmm_bf16(const CsrView& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate, Stream stream) {
  HALOGEN_ASSERT(a.device == Device::cuda, "sparse matrix is a %s view, the CUDA kernel needs device memory",
                 device_name(a.device));
  detail::require_device(x, "spmm_bf16 x");
  detail::require_device(out, "spmm_bf16 out");
  HALOGEN_ASSERT(!a.scaled(), "the CUDA spmm_bf16 takes stored values, not row/column scales");
  HALOGEN_ASSERT(x.rows == a.cols && out.rows == a.rows && out.cols == x.cols,
                 "A is (%lld, %lld), x (%lld, %lld), out (%lld, %lld)", (long long)a.rows, (long long)a.cols,
                 (long long)x.rows, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (a.rows == 0 || x.cols == 0) return;
  spmm_bf16_kernel<<<grid_for(a.rows * 32, kThreads), kThreads, 0, to_cuda(stream)>>>(
      a.rows, a.indptr, a.indices, a.values, bits(x.data), detail::row_stride(x), x.cols, out.data,
      detail::row_stride(out), accumulate);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

}  // namespace halogen::kernels::cuda
