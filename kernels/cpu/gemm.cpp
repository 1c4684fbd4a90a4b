// Dense products through OpenBLAS (cblas_sgemm on row-major views with their strides), parallelised with
// OpenMP around single-threaded OpenBLAS calls.
//
// Why not OpenBLAS's own threads: the pthread build keeps a second pool of busy-waiting threads next to
// OpenMP's, which then compete for the same cores with the SpMM that follows every GEMM in a layer (measured:
// SpMM 15-20% slower right after a multithreaded OpenBLAS call, 2 cores). So OpenBLAS runs one thread per
// call and the product is split here:
// - many rows of c (forward H W, backward dZ W^T): blocks of rows of c, one call each;
// - few rows and columns but a long inner dimension (the weight gradient H^T dZ, k = vertices): fixed blocks
//   of kInnerBlock along k, each a partial product into scratch, then added in block order. The blocks do not
//   depend on the thread count, so neither does the result;
// - otherwise blocks of columns of c, or one call when the product is small.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

constexpr int64_t kInnerBlock = 4096;      // k per partial product of the k-split
constexpr int64_t kSerialFlops = 1 << 21;  // below this, one call (thread start-up would dominate)
constexpr int64_t kMinRowsPerThread = 32;  // a row block smaller than this wastes OpenBLAS's micro-kernels

void single_threaded_blas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

struct Operands {
  const float* a;
  int lda;
  bool transpose_a;
  const float* b;
  int ldb;
  bool transpose_b;
};

void sgemm(const Operands& o, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float alpha,
           float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, o.transpose_a ? CblasTrans : CblasNoTrans,
              o.transpose_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, o.lda, b, o.ldb, beta, c, ldc);
}

// Addresses of op(a) rows [r, ...) / columns [k0, ...) and op(b) rows [k0, ...) / columns [c0, ...).
const float* op_a_rows(const Operands& o, int64_t r) {
  return o.transpose_a ? o.a + r : o.a + r * o.lda;
}
const float* op_a_cols(const Operands& o, int64_t k0) {
  return o.transpose_a ? o.a + k0 * o.lda : o.a + k0;
}
const float* op_b_rows(const Operands& o, int64_t k0) {
  return o.transpose_b ? o.b + k0 : o.b + k0 * o.ldb;
}
const float* op_b_cols(const Operands& o, int64_t c0) {
  return o.transpose_b ? o.b + c0 * o.ldb : o.b + c0;
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
  single_threaded_blas();
  // Leading dimensions must hold a row even for single-row views whose stride was left at 0.
  const auto leading = [](int64_t stride, int64_t cols) {
    return static_cast<int>(std::max<int64_t>({stride, cols, 1}));
  };
  const Operands o{a.data, leading(a.stride, a.cols), transpose_a,
                   b.data, leading(b.stride, b.cols), transpose_b};
  const int ldc = leading(c.stride, c.cols);
  const int threads = omp_get_max_threads();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);

  if (threads == 1 || flops < kSerialFlops) {
    sgemm(o, m, n, k, o.a, o.b, alpha, beta, c.data, ldc);
  } else if (m >= threads * kMinRowsPerThread) {
    // Blocks of rows of c.
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = m * t / threads, end = m * (t + 1) / threads;
      if (begin < end)
        sgemm(o, end - begin, n, k, op_a_rows(o, begin), o.b, alpha, beta, c.data + begin * ldc, ldc);
    }
  } else if (k >= 2 * kInnerBlock && k >= 8 * std::max(m, n)) {
    // Fixed blocks along k into scratch, then summed in block order (independent of the thread count).
    const int64_t blocks = (k + kInnerBlock - 1) / kInnerBlock;
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(blocks * m * n));
    float* partial = scratch.data();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t k0 = block * kInnerBlock, k1 = std::min(k, k0 + kInnerBlock);
      sgemm(o, m, n, k1 - k0, op_a_cols(o, k0), op_b_rows(o, k0), 1.0f, 0.0f, partial + block * m * n,
            static_cast<int>(n));
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < m; ++r) {
      float* row = c.row(r);
      for (int64_t j = 0; j < n; ++j) {
        float sum = partial[r * n + j];
        for (int64_t block = 1; block < blocks; ++block) sum += partial[(block * m + r) * n + j];
        row[j] = beta == 0.0f ? alpha * sum : alpha * sum + beta * row[j];
      }
    }
  } else {
    // Blocks of columns of c.
    const int column_threads = static_cast<int>(std::min<int64_t>(threads, std::max<int64_t>(1, n / 16)));
#pragma omp parallel for schedule(static) num_threads(column_threads)
    for (int t = 0; t < column_threads; ++t) {
      const int64_t begin = n * t / column_threads, end = n * (t + 1) / column_threads;
      if (begin < end)
        sgemm(o, m, end - begin, k, o.a, op_b_cols(o, begin), alpha, beta, c.data + begin, ldc);
    }
  }
}

}  // namespace halogen::kernels::cpu
