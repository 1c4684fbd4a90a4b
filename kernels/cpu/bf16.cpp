// The BF16 ops on the CPU (kernels/ops.h "BF16 storage"): conversions, halo row packing, and the GEMM with
// BF16 operands and FP32 accumulation. (spmm_bf16 is the FP32 SpMM's kernel with a widening load, spmm.cpp.)
//
// gemm_bf16 has two implementations, chosen at run time:
// - AVX512-BF16 (`vdpbf16ps`: 16 lanes, each adds two BF16 x BF16 products into an FP32 accumulator). op(b)
// is
//   packed once into pairs along k ("VNNI" layout: word (p, j) = op(b)(2p, j), op(b)(2p + 1, j)), each block
//   of rows of op(a) into a zero-padded panel; a 4-row x 64-column tile of c lives in 16 registers. The
//   instruction treats BF16 denormals as zero (features and activations are never that small; the tests
//   use normal values).
// - Anywhere else (or forced, for tests: set_gemm_bf16_avx512_allowed(false), or HALOGEN_CPU_BF16=fallback in
//   the environment): blocks of a and b widened to FP32 and multiplied by the FP32 BLAS (cpu::gemm). Debian's
//   OpenBLAS has no sbgemm, so there is no BLAS BF16 path to prefer.
// The AVX512-BF16 kernel splits the work like the FP32 gemm: blocks of rows of c (each element summed over
// all of k by one thread), or, for a long inner dimension (the weight gradient H^T dZ, k = vertices), fixed
// blocks of k summed in block order; the split depends on the shape alone, so results are bitwise the same
// for any thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

constexpr int64_t kInnerBlock = 4096;  // k per partial product of the k-split
constexpr int64_t kPanelRows = 64;     // rows of op(a) per packed panel
constexpr int64_t kSerialFlops = 1 << 21;

// ---- conversions -----------------------------------------------------------------------------------------

// Branch-free round to nearest even with NaN kept, so that the compiler vectorises the row loop; the same
// result as to_bf16 (core/bf16.h).
inline uint16_t round_bits(uint32_t u) {
  const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(nan ? ((u >> 16) | 0x0040u) : rounded);
}

void convert_row(const float* x, int64_t n, uint16_t* out) {
  for (int64_t j = 0; j < n; ++j) {
    uint32_t u;
    std::memcpy(&u, x + j, sizeof(u));
    out[j] = round_bits(u);
  }
}

void widen_row(const uint16_t* x, int64_t n, float* out) {
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t u = static_cast<uint32_t>(x[j]) << 16;
    std::memcpy(out + j, &u, sizeof(u));
  }
}

const uint16_t* bits(const Bf16* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* bits(Bf16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

// ---- gemm_bf16: shapes ----------------------------------------------------------------------------------

struct Operands {
  Matrix<const Bf16> a;
  bool transpose_a;
  Matrix<const Bf16> b;
  bool transpose_b;
  int64_t m, n, k;
};

uint16_t op_b(const Operands& o, int64_t kk, int64_t j) {
  return o.transpose_b ? o.b(j, kk).bits : o.b(kk, j).bits;
}

// Uses the long-k split (blocks of kInnerBlock along k) rather than blocks of rows: few rows (a weight
// gradient's m = a layer width) and a long k. Decided by the shape alone, not the thread count, so that the
// order of additions (and the result, bit for bit) is the same for any number of threads.
bool split_k(const Operands& o) {
  return o.m <= 512 && o.k >= 2 * kInnerBlock && o.k >= 8 * std::max(o.m, o.n);
}

// c = alpha * sum + beta * c for one row of partial sums (beta == 0 never reads c).
inline void finish_row(const float* sum, int64_t n, float alpha, float beta, float* c_row) {
  for (int64_t j = 0; j < n; ++j) c_row[j] = beta == 0.0f ? alpha * sum[j] : alpha * sum[j] + beta * c_row[j];
}

// ---- gemm_bf16: AVX512-BF16
// --------------------------------------------------------------------------------

// op(b) rows [k0, k1) as 32-bit pairs: packed[p * n_pad + j] = (op(b)(k0 + 2p + 1, j) << 16) | op(b)(k0 + 2p,
// j), zero past k1 and past n.   packed: ((k1 - k0 + 1) / 2, n_pad)
void pack_b(const Operands& o, int64_t k0, int64_t k1, int64_t n_pad, std::vector<uint32_t>& packed) {
  const int64_t pairs = (k1 - k0 + 1) / 2;
  packed.assign(static_cast<size_t>(pairs * n_pad), 0u);
  for (int64_t p = 0; p < pairs; ++p) {
    uint32_t* row = packed.data() + p * n_pad;
    const int64_t k = k0 + 2 * p;
    const bool second = k + 1 < k1;
    if (!o.transpose_b) {  // two rows of b, read along j (vectorises)
      const uint16_t* even = bits(o.b.row(k));
      const uint16_t* odd = second ? bits(o.b.row(k + 1)) : even;
      const uint32_t odd_mask = second ? 0xffffffffu : 0u;
      for (int64_t j = 0; j < o.n; ++j)
        row[j] = static_cast<uint32_t>(even[j]) | ((static_cast<uint32_t>(odd[j]) << 16) & odd_mask);
    } else {
      for (int64_t j = 0; j < o.n; ++j)
        row[j] = static_cast<uint32_t>(op_b(o, k, j)) |
                 (second ? static_cast<uint32_t>(op_b(o, k + 1, j)) << 16 : 0u);
    }
  }
}

// op(a) rows [i0, i1), columns [k0, k1) as 32-bit pairs along k (zero-padded), word (r, p) at
// panel[r * row_step + p * pair_step]: rows of `pairs` words when a is not transposed (a copy of each row),
// else pair-major (pairs of rows of a, read along i: vectorises).
struct Panel {
  int64_t row_step = 0, pair_step = 0;
};
Panel pack_a(const Operands& o, int64_t i0, int64_t i1, int64_t k0, int64_t k1, int64_t pairs,
             std::vector<uint32_t>& panel) {
  const int64_t rows = i1 - i0;
  panel.assign(static_cast<size_t>(rows * pairs), 0u);
  if (!o.transpose_a) {
    uint16_t* halves = reinterpret_cast<uint16_t*>(panel.data());
    for (int64_t i = i0; i < i1; ++i)
      std::memcpy(halves + (i - i0) * 2 * pairs, o.a.row(i) + k0,
                  static_cast<size_t>(k1 - k0) * sizeof(uint16_t));
    return Panel{pairs, 1};
  }
  for (int64_t p = 0; p < pairs; ++p) {  // a is (k, m)
    const int64_t k = k0 + 2 * p;
    const bool second = k + 1 < k1;
    const uint16_t* even = bits(o.a.row(k)) + i0;
    const uint16_t* odd = second ? bits(o.a.row(k + 1)) + i0 : even;
    const uint32_t odd_mask = second ? 0xffffffffu : 0u;
    uint32_t* out = panel.data() + p * rows;
    for (int64_t i = 0; i < rows; ++i)
      out[i] = static_cast<uint32_t>(even[i]) | ((static_cast<uint32_t>(odd[i]) << 16) & odd_mask);
  }
  return Panel{1, rows};
}

// kRows x (kVectors * 16) tile of sums: out[r][j] = sum_p dot(panel[r][p], packed[p][c0 + j]).
template <int kRows, int kVectors>
__attribute__((target("avx512f,avx512bf16"))) inline void dot_tile(const uint32_t* panel, Panel layout,
                                                                   int64_t pairs, const uint32_t* packed,
                                                                   int64_t n_pad, int64_t c0, int64_t n,
                                                                   float* out, int64_t out_stride) {
  __m512 acc[kRows][kVectors];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    __m512i b[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) b[v] = _mm512_loadu_si512(packed + p * n_pad + c0 + 16 * v);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m512i a =
          _mm512_set1_epi32(static_cast<int>(panel[r * layout.row_step + p * layout.pair_step]));
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)a, (__m512bh)b[v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) {
    const int64_t left = n - (c0 + 16 * v);
    const __mmask16 mask =
        left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    for (int r = 0; r < kRows; ++r)
      _mm512_mask_storeu_ps(out + r * out_stride + c0 + 16 * v, mask, acc[r][v]);
  }
}

template <int kRows>
__attribute__((target("avx512f,avx512bf16"))) void dot_rows(const uint32_t* panel, Panel layout,
                                                            int64_t pairs, const uint32_t* packed,
                                                            int64_t n_pad, int64_t n, float* out,
                                                            int64_t out_stride) {
  int64_t c0 = 0;
  for (; c0 + 64 <= n_pad; c0 += 64)
    dot_tile<kRows, 4>(panel, layout, pairs, packed, n_pad, c0, n, out, out_stride);
  if (c0 + 32 <= n_pad) {
    dot_tile<kRows, 2>(panel, layout, pairs, packed, n_pad, c0, n, out, out_stride);
    c0 += 32;
  }
  if (c0 < n_pad) dot_tile<kRows, 1>(panel, layout, pairs, packed, n_pad, c0, n, out, out_stride);
}

// sums (rows, n) of a packed panel of `rows` rows against packed op(b).
void dot_panel(const uint32_t* panel, Panel layout, int64_t rows, int64_t pairs, const uint32_t* packed,
               int64_t n_pad, int64_t n, float* sums, int64_t sums_stride) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4)
    dot_rows<4>(panel + r * layout.row_step, layout, pairs, packed, n_pad, n, sums + r * sums_stride,
                sums_stride);
  for (; r < rows; ++r)
    dot_rows<1>(panel + r * layout.row_step, layout, pairs, packed, n_pad, n, sums + r * sums_stride,
                sums_stride);
}

void gemm_avx512(const Operands& o, Matrix<float> c, float alpha, float beta, int threads) {
  const int64_t n_pad = (o.n + 15) / 16 * 16;
  if (split_k(o)) {
    const int64_t blocks = (o.k + kInnerBlock - 1) / kInnerBlock;
    thread_local std::vector<float> scratch;
    scratch.resize(static_cast<size_t>(blocks * o.m * o.n));
    float* partial = scratch.data();
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t k0 = block * kInnerBlock, k1 = std::min(o.k, k0 + kInnerBlock), pairs = (k1 - k0 + 1) / 2;
      thread_local std::vector<uint32_t> packed, panel;
      pack_b(o, k0, k1, n_pad, packed);
      for (int64_t i0 = 0; i0 < o.m; i0 += kPanelRows) {
        const int64_t i1 = std::min(o.m, i0 + kPanelRows);
        const Panel layout = pack_a(o, i0, i1, k0, k1, pairs, panel);
        dot_panel(panel.data(), layout, i1 - i0, pairs, packed.data(), n_pad, o.n,
                  partial + (block * o.m + i0) * o.n, o.n);
      }
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < o.m; ++r) {
      std::vector<float> sum(partial + r * o.n, partial + (r + 1) * o.n);
      for (int64_t block = 1; block < blocks; ++block)
        for (int64_t j = 0; j < o.n; ++j) sum[j] += partial[(block * o.m + r) * o.n + j];
      finish_row(sum.data(), o.n, alpha, beta, c.row(r));
    }
    return;
  }
  const int64_t pairs = (o.k + 1) / 2;
  std::vector<uint32_t> packed;
  pack_b(o, 0, o.k, n_pad, packed);
  const int64_t panels = (o.m + kPanelRows - 1) / kPanelRows;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t panel_index = 0; panel_index < panels; ++panel_index) {
    const int64_t i0 = panel_index * kPanelRows, i1 = std::min(o.m, i0 + kPanelRows);
    thread_local std::vector<uint32_t> panel;
    thread_local std::vector<float> sums;
    const Panel layout = pack_a(o, i0, i1, 0, o.k, pairs, panel);
    sums.resize(static_cast<size_t>((i1 - i0) * o.n));
    dot_panel(panel.data(), layout, i1 - i0, pairs, packed.data(), n_pad, o.n, sums.data(), o.n);
    for (int64_t i = i0; i < i1; ++i) finish_row(sums.data() + (i - i0) * o.n, o.n, alpha, beta, c.row(i));
  }
}

// ---- gemm_bf16: widen to FP32 and use the BLAS
// -------------------------------------------------------------

// Rows [r0, r1) and columns [c0, c1) of a BF16 matrix, widened into `out` (r1 - r0, c1 - c0).
Matrix<const float> widen_block(Matrix<const Bf16> x, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                std::vector<float>& out) {
  out.resize(static_cast<size_t>((r1 - r0) * (c1 - c0)));
  detail::parallel_for(r1 - r0, (r1 - r0) * (c1 - c0), [&](int64_t i) {
    widen_row(bits(x.row(r0 + i) + c0), c1 - c0, out.data() + i * (c1 - c0));
  });
  return Matrix<const float>{out.data(), r1 - r0, c1 - c0, c1 - c0, Device::cpu};
}

void gemm_widened(const Operands& o, Matrix<float> c, float alpha, float beta) {
  std::vector<float> a_block, b_block;
  if (o.k > 2 * kInnerBlock && o.k > o.m) {
    // Long k: blocks of k, each added into c (the first with the caller's beta).
    const int64_t step = 4 * kInnerBlock;
    for (int64_t k0 = 0; k0 < o.k; k0 += step) {
      const int64_t k1 = std::min(o.k, k0 + step);
      const Matrix<const float> a = o.transpose_a ? widen_block(o.a, k0, k1, 0, o.m, a_block)
                                                  : widen_block(o.a, 0, o.m, k0, k1, a_block);
      const Matrix<const float> b = o.transpose_b ? widen_block(o.b, 0, o.n, k0, k1, b_block)
                                                  : widen_block(o.b, k0, k1, 0, o.n, b_block);
      gemm(a, o.transpose_a, b, o.transpose_b, c, alpha, k0 == 0 ? beta : 1.0f);
    }
    return;
  }
  const Matrix<const float> b = widen_block(o.b, 0, o.b.rows, 0, o.b.cols, b_block);
  const int64_t step = 4 * kInnerBlock;  // rows of c per block
  for (int64_t i0 = 0; i0 < o.m; i0 += step) {
    const int64_t i1 = std::min(o.m, i0 + step);
    const Matrix<const float> a =
        o.transpose_a ? widen_block(o.a, 0, o.k, i0, i1, a_block) : widen_block(o.a, i0, i1, 0, o.k, a_block);
    gemm(a, o.transpose_a, b, o.transpose_b, c.slice_rows(i0, i1), alpha, beta);
  }
}

bool environment_forbids_avx512() {
  const char* value = std::getenv("HALOGEN_CPU_BF16");
  return value != nullptr && std::strcmp(value, "fallback") == 0;
}

std::atomic<bool> g_avx512_allowed{!environment_forbids_avx512()};

bool avx512_bf16_in_use() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has && g_avx512_allowed.load(std::memory_order_relaxed);
}

}  // namespace

void convert_to_bf16(Matrix<const float> x, Matrix<Bf16> out, Stream) {
  detail::require_host(x, "convert_to_bf16 x");
  detail::require_host(out, "convert_to_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  detail::parallel_for(x.rows, x.size(), [&](int64_t r) { convert_row(x.row(r), x.cols, bits(out.row(r))); });
}

void scale_round_bf16(Span<const float> scale, Matrix<const float> x, Matrix<Bf16> out, Stream) {
  detail::require_host(scale, "scale_round_bf16 scale");
  detail::require_host(x, "scale_round_bf16 x");
  detail::require_host(out, "scale_round_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  HALOGEN_ASSERT(scale.size == x.rows, "scale_round_bf16: %lld scales for %lld rows", (long long)scale.size,
                 (long long)x.rows);
  detail::parallel_for(x.rows, x.size(), [&](int64_t r) {
    const float s = scale.data[r];
    const float* __restrict__ in = x.row(r);
    uint16_t* __restrict__ o = bits(out.row(r));
    for (int64_t j = 0; j < x.cols; ++j) {
      const float value = in[j] * s;
      uint32_t u;
      std::memcpy(&u, &value, sizeof(u));
      o[j] = round_bits(u);
    }
  });
}

void convert_from_bf16(Matrix<const Bf16> x, Matrix<float> out, Stream) {
  detail::require_host(x, "convert_from_bf16 x");
  detail::require_host(out, "convert_from_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  detail::parallel_for(x.rows, x.size(), [&](int64_t r) { widen_row(bits(x.row(r)), x.cols, out.row(r)); });
}

void gather_rows_bf16(Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<Bf16> out, Stream) {
  detail::require_host(x, "gather_rows_bf16 x");
  detail::require_host(idx, "gather_rows_bf16 idx");
  detail::require_host(out, "gather_rows_bf16 out");
  HALOGEN_ASSERT(out.rows == idx.size && out.cols == x.cols,
                 "gather of %lld rows of width %lld into (%lld, %lld)", (long long)idx.size,
                 (long long)x.cols, (long long)out.rows, (long long)out.cols);
  detail::parallel_for(idx.size, idx.size * x.cols, [&](int64_t i) {
    HALOGEN_ASSERT(idx[i] >= 0 && idx[i] < x.rows, "row %d of %lld", idx[i], (long long)x.rows);
    std::memcpy(out.row(i), x.row(idx[i]), static_cast<size_t>(x.cols) * sizeof(Bf16));
  });
}

void scatter_add_rows_bf16(Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<float> out, Stream) {
  detail::require_host(x, "scatter_add_rows_bf16 x");
  detail::require_host(idx, "scatter_add_rows_bf16 idx");
  detail::require_host(out, "scatter_add_rows_bf16 out");
  HALOGEN_ASSERT(x.rows == idx.size && out.cols == x.cols,
                 "scatter of (%lld, %lld) by %lld indices into width %lld", (long long)x.rows,
                 (long long)x.cols, (long long)idx.size, (long long)out.cols);
  // Serial over i: duplicate indices add in index order (scatter_add_rows's contract); rows are short.
  for (int64_t i = 0; i < idx.size; ++i) {
    HALOGEN_ASSERT(idx[i] >= 0 && idx[i] < out.rows, "row %d of %lld", idx[i], (long long)out.rows);
    const uint16_t* source = bits(x.row(i));
    float* target = out.row(idx[i]);
    for (int64_t j = 0; j < x.cols; ++j) {
      const uint32_t u = static_cast<uint32_t>(source[j]) << 16;
      float value;
      std::memcpy(&value, &u, sizeof(value));
      target[j] += value;
    }
  }
}

void gemm_bf16(Matrix<const Bf16> a, bool transpose_a, Matrix<const Bf16> b, bool transpose_b,
               Matrix<float> c, float alpha, float beta, Stream) {
  detail::require_host(a, "gemm_bf16 a");
  detail::require_host(b, "gemm_bf16 b");
  detail::require_host(c, "gemm_bf16 c");
  const Operands o{a,
                   transpose_a,
                   b,
                   transpose_b,
                   transpose_a ? a.cols : a.rows,
                   transpose_b ? b.rows : b.cols,
                   transpose_a ? a.rows : a.cols};
  const int64_t k_b = transpose_b ? b.cols : b.rows;
  HALOGEN_ASSERT(o.k == k_b, "op(a) is (%lld, %lld) but op(b) is (%lld, %lld)", (long long)o.m,
                 (long long)o.k, (long long)k_b, (long long)o.n);
  HALOGEN_ASSERT(c.rows == o.m && c.cols == o.n, "op(a) op(b) is (%lld, %lld) but c is (%lld, %lld)",
                 (long long)o.m, (long long)o.n, (long long)c.rows, (long long)c.cols);
  if (o.m == 0 || o.n == 0) return;
  if (o.k == 0 || !avx512_bf16_in_use()) return gemm_widened(o, c, alpha, beta);
  const double flops = 2.0 * static_cast<double>(o.m) * static_cast<double>(o.n) * static_cast<double>(o.k);
  gemm_avx512(o, c, alpha, beta, flops < kSerialFlops ? 1 : omp_get_max_threads());
}

bool set_gemm_bf16_avx512_allowed(bool allowed) {
  return g_avx512_allowed.exchange(allowed);
}

const char* gemm_bf16_instruction_set() {
  return avx512_bf16_in_use() ? "avx512bf16" : "fp32 blas (widened)";
}

}  // namespace halogen::kernels::cpu
