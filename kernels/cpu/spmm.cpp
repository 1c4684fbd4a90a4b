// CSR x dense on the CPU: out = A x or out += A x.
//
// SpMM is memory-bound: each nonzero (i, j, v) gathers row j of x (f floats, at a random address) and does f
// multiply-adds. So:
// - Each output row is computed by one thread, one tile of columns at a time; the tile's partial sums stay in
//   vector registers (GCC vector types, fixed tile widths, so the loops fully unroll) and the output row is
//   written once, read only when accumulating.
// - The rows of x that the nonzero `prefetch_distance` places ahead will need are prefetched into L2: the
//   gathers are random, so the hardware prefetcher cannot guess them, and out-of-order execution alone keeps
//   too few misses in flight.
// - One source, compiled twice: for AVX2 (8-float vectors, tiles up to 64 floats) and for the baseline x86-64
//   ISA (SSE2: 4-float vectors, tiles up to 32 floats, what fits its 16 registers), chosen at run time, so
//   the binary runs on any x86-64. Both add in the same order, lane by lane, with separate multiply and add
//   (ISO C++ mode disables FMA contraction), so results are bitwise identical whichever runs, and identical
//   to a naive loop that adds the nonzeros of a row in index order: deterministic for any thread count.
// - Rows are handed to threads in chunks of about equal cost (nonzeros + a per-row term, found by binary
// search
//   on indptr), scheduled dynamically to absorb the irregular cost of cache misses.
// - x may be FP32 or BF16 (spmm_bf16): a BF16 row is widened to FP32 as it is loaded (a zero-extend and a
//   shift, exact), so the sums are the FP32 sums of the widened values, in the same order; the gathered bytes,
//   which bound the kernel, are halved.
// - A matrix without stored values may carry a row and/or a column scale (kernels/ops.h CsrView): the column
//   scale takes the place of the stored value (one multiply per nonzero; col_scale[c] is gathered with row c
//   of x, 4 bytes beside a >= 64-byte row, so it is not prefetched), the row scale multiplies the finished
//   sum once. Each combination is its own instantiation, so the stored-values and all-ones paths are the same
//   code as without scales.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

#define HALOGEN_INLINE inline __attribute__((always_inline))

typedef float Vec4 __attribute__((vector_size(16)));
typedef float Vec8 __attribute__((vector_size(32)));

// Unaligned loads and stores (rows of x and out have any alignment). Vectors are passed by pointer so that no
// function signature carries an AVX vector (which would change the ABI of the baseline build).
template <typename V>
HALOGEN_INLINE void load(V* v, const float* p) {
  std::memcpy(v, p, sizeof(V));
}
// BF16 rows of x are read as vectors of 32-bit words, each holding two neighbouring columns: the even one in
// its low half, the odd one in its high half. Each widens with one instruction (a shift, or a mask) and no
// shuffle, so a tile keeps separate accumulators for its even and its odd columns and interleaves them once,
// when the row is stored.
typedef uint32_t Word4 __attribute__((vector_size(16)));
typedef uint32_t Word8 __attribute__((vector_size(32)));
template <typename V>
struct WordOf;
template <>
struct WordOf<Vec4> {
  using type = Word4;
};
template <>
struct WordOf<Vec8> {
  using type = Word8;
};
// (even, odd) columns <-> two vectors of consecutive columns.
HALOGEN_INLINE void interleave(const Vec4& even, const Vec4& odd, Vec4* lo, Vec4* hi) {
  *lo = __builtin_shufflevector(even, odd, 0, 4, 1, 5);
  *hi = __builtin_shufflevector(even, odd, 2, 6, 3, 7);
}
HALOGEN_INLINE void interleave(const Vec8& even, const Vec8& odd, Vec8* lo, Vec8* hi) {
  *lo = __builtin_shufflevector(even, odd, 0, 8, 1, 9, 2, 10, 3, 11);
  *hi = __builtin_shufflevector(even, odd, 4, 12, 5, 13, 6, 14, 7, 15);
}
HALOGEN_INLINE void deinterleave(const Vec4& lo, const Vec4& hi, Vec4* even, Vec4* odd) {
  *even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6);
  *odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7);
}
HALOGEN_INLINE void deinterleave(const Vec8& lo, const Vec8& hi, Vec8* even, Vec8* odd) {
  *even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14);
  *odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15);
}
HALOGEN_INLINE float widen(float value) { return value; }
HALOGEN_INLINE float widen(Bf16 value) { return to_float(value); }
template <typename V>
HALOGEN_INLINE void store(float* p, const V* v) {
  std::memcpy(p, v, sizeof(V));
}

// Where a nonzero's multiplier comes from: none (all ones), the stored values, or the column scale.
enum class Weights { ones, stored, col_scale };

template <typename X>
struct RowArgs {
  const int32_t* indices;
  const float* values;     // (nnz) for Weights::stored
  const float* col_scale;  // (cols) for Weights::col_scale
  const float* row_scale;  // (rows) with kRowScale
  int64_t nnz;             // of the whole matrix: prefetches stop there
  const X* x;  // (cols, x_stride): float or Bf16
  int64_t x_stride;
  int64_t prefetch_distance;  // in nonzeros
};

template <Weights kWeights, typename X>
HALOGEN_INLINE float weight_of(const RowArgs<X>& args, int64_t k, int32_t column) {
  if (kWeights == Weights::stored) return args.values[k];
  if (kWeights == Weights::col_scale) return args.col_scale[column];
  return 1.0f;
}

// Columns [c0, c0 + kVectors * lanes) of one output row, from the nonzeros [begin, end). With kRowScale the
// sum is multiplied by `row_scale` before it is stored (or added to the output).
template <typename V, int kVectors, Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
HALOGEN_INLINE void row_tile(const RowArgs<X>& args, int64_t begin, int64_t end, float* out_row, int64_t c0,
                             float row_scale) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  constexpr int kTileBytes = kVectors * kLanes * static_cast<int>(sizeof(X));
  V acc[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    if (kAccumulate && !kRowScale)
      load(&acc[j], out_row + c0 + j * kLanes);
    else
      acc[j] = V{};
  }
  const X* x = args.x + c0;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t ahead = k + args.prefetch_distance;
    if (ahead < args.nnz) {
      const char* line = reinterpret_cast<const char*>(x + args.indices[ahead] * args.x_stride);
      for (int offset = 0; offset < kTileBytes; offset += 64) __builtin_prefetch(line + offset, 0, 2);
      if (kWeights == Weights::col_scale) __builtin_prefetch(args.col_scale + args.indices[ahead], 0, 2);
    }
    const int32_t column = args.indices[k];
    const X* x_row = x + column * args.x_stride;
    const float v = weight_of<kWeights>(args, k, column);
    for (int j = 0; j < kVectors; ++j) {
      V x_vector;
      load(&x_vector, x_row + j * kLanes);
      if (kWeights != Weights::ones)
        acc[j] += v * x_vector;
      else
        acc[j] += x_vector;
    }
  }
  for (int j = 0; j < kVectors; ++j) {
    if (kRowScale) {
      acc[j] = row_scale * acc[j];
      if (kAccumulate) {
        V old;
        load(&old, out_row + c0 + j * kLanes);
        acc[j] = old + acc[j];
      }
    }
    store(out_row + c0 + j * kLanes, &acc[j]);
  }
}

// Columns [c0, c0 + kVectors * 2 * lanes) of one output row from BF16 rows of x: row_tile's arithmetic, column
// by column in the same order (so bitwise the same as row_tile on the widened rows), with the columns of each
// 32-bit word split into an even and an odd accumulator.
template <typename V, int kVectors, Weights kWeights, bool kRowScale, bool kAccumulate>
HALOGEN_INLINE void row_tile_pairs(const RowArgs<Bf16>& args, int64_t begin, int64_t end, float* out_row, int64_t c0,
                                   float row_scale) {
  using Word = typename WordOf<V>::type;
  constexpr int kLanes = sizeof(V) / sizeof(float);
  constexpr int kTileBytes = kVectors * static_cast<int>(sizeof(V));
  const Word high_half = Word{} + 0xffff0000u;
  V even[kVectors], odd[kVectors];
  for (int j = 0; j < kVectors; ++j) {
    if (kAccumulate && !kRowScale) {
      V lo, hi;
      load(&lo, out_row + c0 + 2 * j * kLanes);
      load(&hi, out_row + c0 + 2 * j * kLanes + kLanes);
      deinterleave(lo, hi, &even[j], &odd[j]);
    } else {
      even[j] = V{};
      odd[j] = V{};
    }
  }
  const Bf16* x = args.x + c0;
  for (int64_t k = begin; k < end; ++k) {
    const int64_t ahead = k + args.prefetch_distance;
    if (ahead < args.nnz) {
      const char* line = reinterpret_cast<const char*>(x + args.indices[ahead] * args.x_stride);
      for (int offset = 0; offset < kTileBytes; offset += 64) __builtin_prefetch(line + offset, 0, 2);
      if (kWeights == Weights::col_scale) __builtin_prefetch(args.col_scale + args.indices[ahead], 0, 2);
    }
    const int32_t column = args.indices[k];
    const Bf16* x_row = x + column * args.x_stride;
    const float v = weight_of<kWeights>(args, k, column);
    for (int j = 0; j < kVectors; ++j) {
      Word words;
      std::memcpy(&words, x_row + 2 * j * kLanes, sizeof(Word));
      const V x_even = (V)(words << 16), x_odd = (V)(words & high_half);
      if (kWeights != Weights::ones) {
        even[j] += v * x_even;
        odd[j] += v * x_odd;
      } else {
        even[j] += x_even;
        odd[j] += x_odd;
      }
    }
  }
  for (int j = 0; j < kVectors; ++j) {
    V lo, hi;
    interleave(even[j], odd[j], &lo, &hi);
    if (kRowScale) {
      lo = row_scale * lo;
      hi = row_scale * hi;
      if (kAccumulate) {
        V old_lo, old_hi;
        load(&old_lo, out_row + c0 + 2 * j * kLanes);
        load(&old_hi, out_row + c0 + 2 * j * kLanes + kLanes);
        lo = old_lo + lo;
        hi = old_hi + hi;
      }
    }
    store(out_row + c0 + 2 * j * kLanes, &lo);
    store(out_row + c0 + 2 * j * kLanes + kLanes, &hi);
  }
}

// The last `count` < lanes columns of a row.
template <Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
HALOGEN_INLINE void row_tail(const RowArgs<X>& args, int64_t begin, int64_t end, float* out_row, int64_t c0,
                             int64_t count, float row_scale) {
  float acc[16];  // count < 16 (a BF16 tile's 2 x 8 columns)
  for (int64_t j = 0; j < count; ++j) acc[j] = kAccumulate && !kRowScale ? out_row[c0 + j] : 0.0f;
  for (int64_t k = begin; k < end; ++k) {
    const int32_t column = args.indices[k];
    const X* x_row = args.x + column * args.x_stride + c0;
    const float v = weight_of<kWeights>(args, k, column);
    for (int64_t j = 0; j < count; ++j) acc[j] += kWeights != Weights::ones ? v * widen(x_row[j]) : widen(x_row[j]);
  }
  for (int64_t j = 0; j < count; ++j) {
    if (kRowScale) {
      const float scaled = row_scale * acc[j];
      out_row[c0 + j] = kAccumulate ? out_row[c0 + j] + scaled : scaled;
    } else {
      out_row[c0 + j] = acc[j];
    }
  }
}

// Rows [row_begin, row_end): tiles of kMaxVectors vectors, then one tile each of 4, 2, 1 vectors as needed,
// then the tail.
template <typename V, int kMaxVectors, Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
HALOGEN_INLINE void rows_kernel(const CsrView& a, const RowArgs<X>& args, int64_t width, float* out,
                                int64_t out_stride, int64_t row_begin, int64_t row_end) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  if constexpr (std::is_same<X, Bf16>::value) {
    // Tiles of 4 word vectors (8 accumulators: 64 columns with AVX2), then 2, then 1, then the tail.
    constexpr int kColumns = 2 * kLanes;  // per word vector
    for (int64_t r = row_begin; r < row_end; ++r) {
      const int64_t begin = a.indptr[r], end = a.indptr[r + 1];
      float* out_row = out + r * out_stride;
      const float row_scale = kRowScale ? args.row_scale[r] : 1.0f;
      int64_t c0 = 0;
      for (; c0 + 4 * kColumns <= width; c0 += 4 * kColumns)
        row_tile_pairs<V, 4, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
      if (c0 + 2 * kColumns <= width) {
        row_tile_pairs<V, 2, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
        c0 += 2 * kColumns;
      }
      if (c0 + kColumns <= width) {
        row_tile_pairs<V, 1, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
        c0 += kColumns;
      }
      if (c0 < width)
        row_tail<kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, width - c0, row_scale);
    }
  } else {
    for (int64_t r = row_begin; r < row_end; ++r) {
      const int64_t begin = a.indptr[r], end = a.indptr[r + 1];
      float* out_row = out + r * out_stride;
      const float row_scale = kRowScale ? args.row_scale[r] : 1.0f;
      int64_t c0 = 0;
      for (; c0 + kMaxVectors * kLanes <= width; c0 += kMaxVectors * kLanes)
        row_tile<V, kMaxVectors, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
      if (kMaxVectors > 4 && c0 + 4 * kLanes <= width) {
        row_tile<V, 4, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
        c0 += 4 * kLanes;
      }
      if (c0 + 2 * kLanes <= width) {
        row_tile<V, 2, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
        c0 += 2 * kLanes;
      }
      if (c0 + kLanes <= width) {
        row_tile<V, 1, kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, row_scale);
        c0 += kLanes;
      }
      if (c0 < width)
        row_tail<kWeights, kRowScale, kAccumulate>(args, begin, end, out_row, c0, width - c0, row_scale);
    }
  }
}

template <typename X>
using RowsFunction = void (*)(const CsrView&, const RowArgs<X>&, int64_t, float*, int64_t, int64_t, int64_t);

template <Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
__attribute__((target("avx2"))) void rows_avx2(const CsrView& a, const RowArgs<X>& args, int64_t width,
                                               float* out, int64_t out_stride, int64_t row_begin,
                                               int64_t row_end) {
  rows_kernel<Vec8, 8, kWeights, kRowScale, kAccumulate>(a, args, width, out, out_stride, row_begin, row_end);
}

template <Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
void rows_baseline(const CsrView& a, const RowArgs<X>& args, int64_t width, float* out, int64_t out_stride,
                   int64_t row_begin, int64_t row_end) {
  rows_kernel<Vec4, 8, kWeights, kRowScale, kAccumulate>(a, args, width, out, out_stride, row_begin, row_end);
}

std::atomic<bool> g_avx2_allowed{true};

bool avx2_in_use() {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  return has_avx2 && g_avx2_allowed.load(std::memory_order_relaxed);
}

template <Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
RowsFunction<X> select_rows_function() {
  return avx2_in_use() ? &rows_avx2<kWeights, kRowScale, kAccumulate, X>
                       : &rows_baseline<kWeights, kRowScale, kAccumulate, X>;
}

// First row r with cost(r) >= target, where cost(r) = indptr[r] + r * kRowCost is nondecreasing.
constexpr int64_t kRowCost = 2;  // a row's output write and loop overhead cost about 2 nonzeros
int64_t row_at_cost(const int64_t* indptr, int64_t rows, int64_t target) {
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

template <Weights kWeights, bool kRowScale, bool kAccumulate, typename X>
void spmm_parallel(const CsrView& a, Matrix<const X> x, Matrix<float> out) {
  const RowsFunction<X> rows_function = select_rows_function<kWeights, kRowScale, kAccumulate, X>();
  // Prefetch about 3 KiB of gathers ahead (12 nonzeros for 64-float tiles, 48 for 16-float rows), into L2
  // (locality hint 2): measured on a Zen 4 VM, single thread, 1M x 1M uniform random matrix, this gathered
  // 25-40% faster than prefetching into L1 at 1 KiB ahead, which was in turn ~25% faster than no prefetch.
  const int64_t tile_bytes = std::min<int64_t>(x.cols, 64) * static_cast<int64_t>(sizeof(X));
  const RowArgs<X> args{
      a.indices, a.values, a.col_scale, a.row_scale,
      a.nnz,     x.data,   x.stride,    std::clamp<int64_t>(3072 / std::max<int64_t>(tile_bytes, 1), 4, 64)};
  const int threads = omp_get_max_threads();
  const int64_t total_cost = a.nnz + a.rows * kRowCost;
  // Several chunks per thread so that dynamic scheduling can even out rows whose gathers miss the cache more;
  // with a progress hook (kernels/ops.h), small enough chunks that the hook runs often.
  const kernels::detail::ProgressState hook = kernels::detail::progress_state();
  int64_t chunks = threads == 1 ? 1 : 16 * threads;
  if (hook.fn != nullptr) chunks = std::max<int64_t>(chunks, total_cost / kProgressChunkCost);
  chunks = std::max<int64_t>(1, std::min<int64_t>(a.rows, chunks));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t row_begin = chunk == 0 ? 0 : row_at_cost(a.indptr, a.rows, total_cost * chunk / chunks);
    const int64_t row_end =
        chunk == chunks - 1 ? a.rows : row_at_cost(a.indptr, a.rows, total_cost * (chunk + 1) / chunks);
    rows_function(a, args, x.cols, out.data, out.stride, row_begin, row_end);
    if (hook.fn != nullptr && omp_get_thread_num() == 0) hook.fn(hook.context);
  }
}

template <Weights kWeights, bool kRowScale, typename X>
void dispatch_accumulate(const CsrView& a, Matrix<const X> x, Matrix<float> out, bool accumulate) {
  if (accumulate)
    spmm_parallel<kWeights, kRowScale, true, X>(a, x, out);
  else
    spmm_parallel<kWeights, kRowScale, false, X>(a, x, out);
}

template <typename X>
void spmm_any(const CsrView& a, Matrix<const X> x, Matrix<float> out, bool accumulate) {
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
  HALOGEN_ASSERT(a.values == nullptr || !a.scaled(), "a CSR view has stored values and row/column scales");
  if (a.values != nullptr) {
    dispatch_accumulate<Weights::stored, false>(a, x, out, accumulate);
  } else if (a.col_scale != nullptr) {
    if (a.row_scale != nullptr)
      dispatch_accumulate<Weights::col_scale, true>(a, x, out, accumulate);
    else
      dispatch_accumulate<Weights::col_scale, false>(a, x, out, accumulate);
  } else if (a.row_scale != nullptr) {
    dispatch_accumulate<Weights::ones, true>(a, x, out, accumulate);
  } else {
    dispatch_accumulate<Weights::ones, false>(a, x, out, accumulate);
  }
}

}  // namespace

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream) {
  spmm_any(a, x, out, accumulate);
}

void spmm_bf16(const CsrView& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate, Stream) {
  spmm_any(a, x, out, accumulate);
}

void release_sparse_cache() {}

bool set_spmm_avx2_allowed(bool allowed) {
  return g_avx2_allowed.exchange(allowed);
}
const char* spmm_instruction_set() {
  return avx2_in_use() ? "avx2" : "baseline x86-64 (sse2)";
}  // the CPU kernel caches nothing

}  // namespace halogen::kernels::cpu
