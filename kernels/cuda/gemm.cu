// Dense products through cuBLAS on row-major views. cuBLAS is column-major, and a row-major (r x c) matrix
// with row stride ld is the column-major (c x r) matrix with leading dimension ld, i.e. its transpose. So
// C = op(A) op(B) (row-major) is computed as the column-major product C^T = op(B)^T op(A)^T:
//   cublasSgemm(opB, opA, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc)
// with the same transpose flags as given (transposing the column-major view of a row-major matrix gives the
// row-major matrix back).
// Math mode: CUBLAS_DEFAULT_MATH (full FP32; set explicitly when the handle is made, context.cu) keeps results
// comparable to the CPU's FP32 BLAS; set_gemm_tf32(true) (`--tf32`) switches every handle to
// CUBLAS_TF32_TENSOR_OP_MATH at its next call. (NVIDIA_TF32_OVERRIDE=0 in the environment still disables TF32.)
#include <algorithm>
#include <atomic>

#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

std::atomic<bool> g_gemm_tf32{false};

// c = beta * c, where beta == 0 never reads c (BLAS semantics for k == 0).
__global__ void scale_kernel(float* c, int64_t rows, int64_t cols, int64_t stride, float beta) {  // (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, col = e.col;
    float* element = c + r * stride + col;
    *element = beta == 0.0f ? 0.0f : beta * *element;
  }
}

}  // namespace

void set_gemm_tf32(bool allowed) { g_gemm_tf32.store(allowed); }
bool gemm_tf32() { return g_gemm_tf32.load(); }

void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream stream) {
  detail::require_device(a, "gemm a");
  detail::require_device(b, "gemm b");
  detail::require_device(c, "gemm c");
  const int64_t m = transpose_a ? a.cols : a.rows;
  const int64_t k = transpose_a ? a.rows : a.cols;
  const int64_t k_b = transpose_b ? b.cols : b.rows;
  const int64_t n = transpose_b ? b.rows : b.cols;
  HALOGEN_ASSERT(k == k_b, "op(a) is (%lld, %lld) but op(b) is (%lld, %lld)", (long long)m, (long long)k,
                 (long long)k_b, (long long)n);
  HALOGEN_ASSERT(c.rows == m && c.cols == n, "op(a) op(b) is (%lld, %lld) but c is (%lld, %lld)", (long long)m,
                 (long long)n, (long long)c.rows, (long long)c.cols);
  if (m == 0 || n == 0) return;
  const cudaStream_t cuda_stream = to_cuda(stream);
  if (k == 0) {
    scale_kernel<<<grid_for(c.size(), kThreads), kThreads, 0, cuda_stream>>>(c.data, c.rows, c.cols,
                                                                             detail::row_stride(c), beta);
    HALOGEN_CUDA_CHECK_LAUNCH();
    return;
  }
  constexpr int64_t kIntMax = 2147483647;
  HALOGEN_ASSERT(m <= kIntMax && n <= kIntMax && k <= kIntMax && a.stride <= kIntMax && b.stride <= kIntMax &&
                     c.stride <= kIntMax,
                 "gemm sizes exceed the 32-bit cuBLAS interface");
  // Leading dimensions must hold a row even for single-row views whose stride was left at 0.
  const auto leading = [](int64_t stride, int64_t cols) { return static_cast<int>(std::max<int64_t>({stride, cols, 1})); };
  ThreadContext& context = thread_context();
  CUBLAS_CHECK(cublasSetStream(context.cublas, cuda_stream));
  const bool tf32 = gemm_tf32();
  if (tf32 != context.cublas_tf32) {
    CUBLAS_CHECK(cublasSetMathMode(context.cublas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    context.cublas_tf32 = tf32;
  }
  CUBLAS_CHECK(cublasSgemm(context.cublas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                           transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                           static_cast<int>(k), &alpha, b.data, leading(b.stride, b.cols), a.data,
                           leading(a.stride, a.cols), &beta, c.data, leading(c.stride, c.cols)));
}

}  // namespace halogen::kernels::cuda

namespace halogen::kernels::cuda {

// BF16 operands, FP32 output and FP32 compute (CUBLAS_COMPUTE_32F: tensor cores take BF16 inputs and add in
// FP32), with the same row-major-as-transposed-column-major mapping as gemm.
void gemm_bf16(Matrix<const Bf16> a, bool transpose_a, Matrix<const Bf16> b, bool transpose_b, Matrix<float> c,
               float alpha, float beta, Stream stream) {
  detail::require_device(a, "gemm_bf16 a");
  detail::require_device(b, "gemm_bf16 b");
  detail::require_device(c, "gemm_bf16 c");
  const int64_t m = transpose_a ? a.cols : a.rows;
  const int64_t k = transpose_a ? a.rows : a.cols;
  const int64_t k_b = transpose_b ? b.cols : b.rows;
  const int64_t n = transpose_b ? b.rows : b.cols;
  HALOGEN_ASSERT(k == k_b, "op(a) is (%lld, %lld) but op(b) is (%lld, %lld)", (long long)m, (long long)k,
                 (long long)k_b, (long long)n);
  HALOGEN_ASSERT(c.rows == m && c.cols == n, "op(a) op(b) is (%lld, %lld) but c is (%lld, %lld)", (long long)m,
                 (long long)n, (long long)c.rows, (long long)c.cols);
  if (m == 0 || n == 0) return;
  const cudaStream_t cuda_stream = to_cuda(stream);
  if (k == 0) {
    scale_kernel<<<grid_for(c.size(), kThreads), kThreads, 0, cuda_stream>>>(c.data, c.rows, c.cols,
                                                                             detail::row_stride(c), beta);
    HALOGEN_CUDA_CHECK_LAUNCH();
    return;
  }
  constexpr int64_t kIntMax = 2147483647;
  HALOGEN_ASSERT(m <= kIntMax && n <= kIntMax && k <= kIntMax && a.stride <= kIntMax && b.stride <= kIntMax &&
                     c.stride <= kIntMax,
                 "gemm sizes exceed the 32-bit cuBLAS interface");
  const auto leading = [](int64_t stride, int64_t cols) { return static_cast<int>(std::max<int64_t>({stride, cols, 1})); };
  ThreadContext& context = thread_context();
  CUBLAS_CHECK(cublasSetStream(context.cublas, cuda_stream));
  CUBLAS_CHECK(cublasGemmEx(context.cublas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                            transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                            static_cast<int>(k), &alpha, b.data, CUDA_R_16BF, leading(b.stride, b.cols), a.data,
                            CUDA_R_16BF, leading(a.stride, a.cols), &beta, c.data, CUDA_R_32F,
                            leading(c.stride, c.cols), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace halogen::kernels::cuda
