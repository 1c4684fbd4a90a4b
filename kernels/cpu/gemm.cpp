// Dense products through OpenBLAS (cblas_sgemm on row-major views with their strides).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

// OpenBLAS (pthread build) keeps its own thread pool; make it follow omp_get_max_threads(), which is how the
// trainer's --threads is expressed. Setting it is only done when the wanted count changes.
void match_blas_threads() {
  static std::atomic<int> blas_threads{0};
  const int wanted = omp_get_max_threads();
  if (blas_threads.load(std::memory_order_relaxed) != wanted) {
    openblas_set_num_threads(wanted);
    blas_threads.store(wanted, std::memory_order_relaxed);
  }
}

}  // namespace

void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream) {
  detail::require_host(a, "gemm a");
  detail::require_host(b, "gemm b");
  detail::require_host(c, "gemm c");
  const int64_t m = transpose_a ? a.cols : a.rows;
  const int64_t k = transpose_a ? a.rows : a.cols;
  const int64_t k_b = transpose_b ? b.cols : b.rows;
  const int64_t n = transpose_b ? b.rows : b.cols;
  HALOGEN_ASSERT(k == k_b, "op(a) is (%lld, %lld) but op(b) is (%lld, %lld)", (long long)m, (long long)k,
                 (long long)k_b, (long long)n);
  HALOGEN_ASSERT(c.rows == m && c.cols == n, "op(a) op(b) is (%lld, %lld) but c is (%lld, %lld)",
                 (long long)m, (long long)n, (long long)c.rows, (long long)c.cols);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS semantics: c = beta c, and beta == 0 never reads c
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < m; ++r) {
      float* row = c.row(r);
      for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  constexpr int64_t kIntMax = 2147483647;
  HALOGEN_ASSERT(m <= kIntMax && n <= kIntMax && k <= kIntMax && a.stride <= kIntMax && b.stride <= kIntMax &&
                     c.stride <= kIntMax,
                 "gemm sizes exceed the 32-bit BLAS interface");
  match_blas_threads();
  // Leading dimensions must hold a row even for single-row views whose stride was left at 0.
  const auto leading = [](int64_t stride, int64_t cols) {
    return static_cast<int>(std::max<int64_t>({stride, cols, 1}));
  };
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a.data,
              leading(a.stride, a.cols), b.data, leading(b.stride, b.cols), beta, c.data,
              leading(c.stride, c.cols));
}

}  // namespace halogen::kernels::cpu
