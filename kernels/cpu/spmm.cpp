// CSR x dense on the CPU: out = A x or out += A x.
//
// SpMM is memory-bound: each nonzero (i, j, v) reads one row of x (f floats) and does f multiply-adds. So
// - each output row is computed by one thread, in tiles of the feature dimension whose partial sums stay in
//   registers (tile widths are compile-time constants, so the inner loop is unrolled and vectorised);
//   the output row is written once, and read only when accumulating;
// - rows are handed to threads in chunks of about equal cost (nonzeros + a per-row term), found by binary
// search
//   on indptr, and chunks are scheduled dynamically to absorb the irregular cost of gathering x's rows;
// - the order of additions within a row is the index order, whatever the thread count (deterministic).
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

// One tile of kTile columns [c0, c0 + kTile) of output row `row`. Pattern matrices (values == nullptr) use 1.
template <int kTile, bool kHasValues, bool kAccumulate>
inline void spmm_row_tile(const int32_t* __restrict__ indices, const float* __restrict__ values,
                          int64_t begin, int64_t end, const float* __restrict__ x, int64_t x_stride,
                          float* __restrict__ out_row, int64_t c0) {
  float acc[kTile];
  if (kAccumulate) {
#pragma omp simd
    for (int j = 0; j < kTile; ++j) acc[j] = out_row[c0 + j];
  } else {
#pragma omp simd
    for (int j = 0; j < kTile; ++j) acc[j] = 0.0f;
  }
  for (int64_t k = begin; k < end; ++k) {
    const float* __restrict__ x_row = x + static_cast<int64_t>(indices[k]) * x_stride + c0;
    if (kHasValues) {
      const float v = values[k];
#pragma omp simd
      for (int j = 0; j < kTile; ++j) acc[j] += v * x_row[j];
    } else {
#pragma omp simd
      for (int j = 0; j < kTile; ++j) acc[j] += x_row[j];
    }
  }
#pragma omp simd
  for (int j = 0; j < kTile; ++j) out_row[c0 + j] = acc[j];
}

template <bool kHasValues, bool kAccumulate>
void spmm_rows(const CsrView& a, const float* x, int64_t x_stride, int64_t width, float* out,
               int64_t out_stride, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t begin = a.indptr[r], end = a.indptr[r + 1];
    float* out_row = out + r * out_stride;
    int64_t c0 = 0;
    for (; c0 + 64 <= width; c0 += 64)
      spmm_row_tile<64, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
    if (c0 + 32 <= width) {
      spmm_row_tile<32, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
      c0 += 32;
    }
    if (c0 + 16 <= width) {
      spmm_row_tile<16, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
      c0 += 16;
    }
    if (c0 + 8 <= width) {
      spmm_row_tile<8, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
      c0 += 8;
    }
    if (c0 + 4 <= width) {
      spmm_row_tile<4, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
      c0 += 4;
    }
    for (; c0 < width; ++c0)
      spmm_row_tile<1, kHasValues, kAccumulate>(a.indices, a.values, begin, end, x, x_stride, out_row, c0);
  }
}

// First row r with cost(r) >= target, where cost(r) = indptr[r] + r * kRowCost is nondecreasing.
int64_t row_at_cost(const int64_t* indptr, int64_t rows, int64_t target) {
  constexpr int64_t kRowCost = 2;  // a row costs its output write and loop overhead: about 2 nonzeros
  int64_t lo = 0, hi = rows;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (indptr[mid] + mid * kRowCost < target)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

template <bool kHasValues, bool kAccumulate>
void spmm_parallel(const CsrView& a, Matrix<const float> x, Matrix<float> out) {
  const int threads = omp_get_max_threads();
  const int64_t total_cost = a.nnz + a.rows * 2;
  // Several chunks per thread so that dynamic scheduling can even out gathers that miss the cache more.
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(a.rows, threads == 1 ? 1 : 8 * threads));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t row_begin = chunk == 0 ? 0 : row_at_cost(a.indptr, a.rows, total_cost * chunk / chunks);
    const int64_t row_end =
        chunk == chunks - 1 ? a.rows : row_at_cost(a.indptr, a.rows, total_cost * (chunk + 1) / chunks);
    spmm_rows<kHasValues, kAccumulate>(a, x.data, x.stride, x.cols, out.data, out.stride, row_begin, row_end);
  }
}

}  // namespace

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream) {
  HALOGEN_ASSERT(a.device == Device::cpu, "sparse matrix is a %s view, the CPU kernel needs host memory",
                 device_name(a.device));
  detail::require_host(x, "spmm x");
  detail::require_host(out, "spmm out");
  HALOGEN_ASSERT(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0);
  HALOGEN_ASSERT(x.rows == a.cols, "A is (%lld, %lld) but x has %lld rows", (long long)a.rows,
                 (long long)a.cols, (long long)x.rows);
  HALOGEN_ASSERT(out.rows == a.rows && out.cols == x.cols, "A x is (%lld, %lld) but out is (%lld, %lld)",
                 (long long)a.rows, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  if (a.rows == 0 || x.cols == 0) return;
  HALOGEN_ASSERT(a.indptr != nullptr && a.indptr[0] == 0 && a.indptr[a.rows] == a.nnz,
                 "indptr must run from 0 to nnz = %lld", (long long)a.nnz);
  HALOGEN_ASSERT(a.nnz == 0 || a.indices != nullptr);
  if (a.values != nullptr) {
    if (accumulate)
      spmm_parallel<true, true>(a, x, out);
    else
      spmm_parallel<true, false>(a, x, out);
  } else {
    if (accumulate)
      spmm_parallel<false, true>(a, x, out);
    else
      spmm_parallel<false, false>(a, x, out);
  }
}

void release_sparse_cache() {}  // the CPU kernel caches nothing

}  // namespace halogen::kernels::cpu
