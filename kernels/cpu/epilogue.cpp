// Row-wise epilogues of a layer: bias, ReLU, dropout (fused into one pass), their backward, and the bias
// gradient. Dropout decisions come from the counter-based RNG keyed by global row id, so they do not depend
// on the rank, the partition or the thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

void add_bias(Matrix<float> out, Span<const float> bias, Stream) {
  detail::require_host(out, "add_bias out");
  detail::require_host(bias, "add_bias bias");
  HALOGEN_ASSERT(bias.size == out.cols, "bias has %lld entries, out has %lld columns", (long long)bias.size,
                 (long long)out.cols);
  const int64_t width = out.cols;
  const float* __restrict__ b = bias.data;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < out.rows; ++r) {
    float* __restrict__ row = out.row(r);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) row[c] += b[c];
  }
}

void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream) {
  detail::require_host(grad_out, "bias_backward grad_out");
  detail::require_host(grad_bias, "bias_backward grad_bias");
  HALOGEN_ASSERT(grad_bias.size == grad_out.cols, "grad_bias has %lld entries, grad_out has %lld columns",
                 (long long)grad_bias.size, (long long)grad_out.cols);
  const int64_t width = grad_out.cols;
  if (grad_out.rows == 0 || width == 0) return;
  // Column sums of fixed row blocks (in parallel), then the blocks in order: independent of the thread count.
  const int64_t blocks = (grad_out.rows + detail::kReductionBlockRows - 1) / detail::kReductionBlockRows;
  std::vector<float> block_sums(static_cast<size_t>(blocks * width), 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    float* __restrict__ sums = block_sums.data() + block * width;
    const int64_t end = std::min(grad_out.rows, (block + 1) * detail::kReductionBlockRows);
    for (int64_t r = block * detail::kReductionBlockRows; r < end; ++r) {
      const float* __restrict__ row = grad_out.row(r);
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) sums[c] += row[c];
    }
  }
  for (int64_t c = 0; c < width; ++c) {
    double total = 0.0;
    for (int64_t block = 0; block < blocks; ++block) total += block_sums[block * width + c];
    grad_bias[c] += static_cast<float>(total);
  }
}

namespace {

void check_dropout(const EpilogueParams& params, Span<const int64_t> row_gid, int64_t rows) {
  HALOGEN_ASSERT(params.dropout >= 0.0f && params.dropout < 1.0f, "dropout probability %g is not in [0, 1)",
                 static_cast<double>(params.dropout));
  detail::require_host(row_gid, "dropout row_gid");
  HALOGEN_ASSERT(params.dropout == 0.0f || row_gid.size == rows, "row_gid has %lld entries for %lld rows",
                 (long long)row_gid.size, (long long)rows);
}

// u[i] = rng::uniform(seed, stream, first_index + i) for i < count: the same Philox4x32-10 as core/rng.h (bit
// for bit, which the tests check), written as one loop over i that GCC vectorises, and compiled for AVX2 and
// for baseline x86-64. About 1.6x faster than calling rng::uniform per element.
__attribute__((target_clones("avx2", "default"))) void uniform_block(uint64_t seed, uint64_t stream,
                                                                     uint64_t first_index, int64_t count,
                                                                     float* __restrict__ u) {
  const uint32_t key0 = static_cast<uint32_t>(seed), key1 = static_cast<uint32_t>(seed >> 32);
  const uint32_t stream0 = static_cast<uint32_t>(stream), stream1 = static_cast<uint32_t>(stream >> 32);
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t index = first_index + static_cast<uint64_t>(i);
    uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = stream0,
             c3 = stream1, k0 = key0, k1 = key1;
#pragma GCC unroll 10
    for (int round = 0; round < 10; ++round) {
      const uint64_t product0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      const uint64_t product1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ k0;
      const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(product1);
      c3 = static_cast<uint32_t>(product0);
      c0 = next0;
      c2 = next2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    u[i] = static_cast<float>(c0 >> 8) * (1.0f / 16777216.0f);
  }
}

// The same draw with AVX2 intrinsics, 8 counters per step: the 32x32->64-bit products of Philox done as two
// _mm256_mul_epu32 (even and odd lanes) whose halves are blended back; ~2x the auto-vectorised loop above.
__attribute__((target("avx2"))) void uniform_block_avx2(uint64_t seed, uint64_t stream, uint64_t first_index,
                                                        int64_t count, float* __restrict__ u) {
  const __m256i multiplier0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i multiplier1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256i stream0 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m256i stream1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    alignas(32) uint32_t low[8], high[8];
    for (int lane = 0; lane < 8; ++lane) {
      const uint64_t index = first_index + static_cast<uint64_t>(i + lane);
      low[lane] = static_cast<uint32_t>(index);
      high[lane] = static_cast<uint32_t>(index >> 32);
    }
    __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(low));
    __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(high));
    __m256i c2 = stream0, c3 = stream1;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      const __m256i even0 = _mm256_mul_epu32(c0, multiplier0);
      const __m256i odd0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), multiplier0);
      const __m256i even1 = _mm256_mul_epu32(c2, multiplier1);
      const __m256i odd1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), multiplier1);
      const __m256i high0 = _mm256_blend_epi32(_mm256_srli_epi64(even0, 32), odd0, 0xAA);
      const __m256i low0 = _mm256_blend_epi32(even0, _mm256_slli_epi64(odd0, 32), 0xAA);
      const __m256i high1 = _mm256_blend_epi32(_mm256_srli_epi64(even1, 32), odd1, 0xAA);
      const __m256i low1 = _mm256_blend_epi32(even1, _mm256_slli_epi64(odd1, 32), 0xAA);
      const __m256i next0 =
          _mm256_xor_si256(_mm256_xor_si256(high1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
      const __m256i next2 =
          _mm256_xor_si256(_mm256_xor_si256(high0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
      c0 = next0;
      c1 = low1;
      c2 = next2;
      c3 = low0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const __m256 value =
        _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(c0, 8)), _mm256_set1_ps(1.0f / 16777216.0f));
    _mm256_storeu_ps(u + i, value);
  }
  if (i < count) uniform_block(seed, stream, first_index + static_cast<uint64_t>(i), count - i, u + i);
}

// The same draw with AVX-512, 16 counters per step: as uniform_block_avx2, with mask blends; ~2x the AVX2 draw
// where the CPU has AVX-512 (dropout draws one number per element of every dropped matrix, every epoch).
// The zero-masked forms of the AVX-512 shifts and products with every lane selected: the plain forms pass
// GCC 12 an undefined source vector, which -Wmaybe-uninitialized reports (GCC bug 105593).
constexpr __mmask16 kAllLanes = 0xFFFF, kOddLanes = 0xAAAA;
constexpr __mmask8 kAllPairs = 0xFF;
__attribute__((target("avx512f"))) inline __m512i mul_epu32(__m512i a, __m512i b) {
  return _mm512_maskz_mul_epu32(kAllPairs, a, b);
}
__attribute__((target("avx512f"))) inline __m512i srli_epi64(__m512i a, unsigned shift) {
  return _mm512_maskz_srli_epi64(kAllPairs, a, shift);
}
__attribute__((target("avx512f"))) inline __m512i slli_epi64(__m512i a, unsigned shift) {
  return _mm512_maskz_slli_epi64(kAllPairs, a, shift);
}

__attribute__((target("avx512f"))) void uniform_block_avx512(uint64_t seed, uint64_t stream, uint64_t first_index,
                                                            int64_t count, float* __restrict__ u) {
  const __m512i multiplier0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i multiplier1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m512i stream0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m512i stream1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    alignas(64) uint32_t low[16], high[16];
    for (int lane = 0; lane < 16; ++lane) {
      const uint64_t index = first_index + static_cast<uint64_t>(i + lane);
      low[lane] = static_cast<uint32_t>(index);
      high[lane] = static_cast<uint32_t>(index >> 32);
    }
    __m512i c0 = _mm512_load_si512(low);
    __m512i c1 = _mm512_load_si512(high);
    __m512i c2 = stream0, c3 = stream1;
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int round = 0; round < 10; ++round) {
      const __m512i even0 = mul_epu32(c0, multiplier0);
      const __m512i odd0 = mul_epu32(srli_epi64(c0, 32), multiplier0);
      const __m512i even1 = mul_epu32(c2, multiplier1);
      const __m512i odd1 = mul_epu32(srli_epi64(c2, 32), multiplier1);
      const __m512i high0 = _mm512_mask_blend_epi32(kOddLanes, srli_epi64(even0, 32), odd0);
      const __m512i low0 = _mm512_mask_blend_epi32(kOddLanes, even0, slli_epi64(odd0, 32));
      const __m512i high1 = _mm512_mask_blend_epi32(kOddLanes, srli_epi64(even1, 32), odd1);
      const __m512i low1 = _mm512_mask_blend_epi32(kOddLanes, even1, slli_epi64(odd1, 32));
      const __m512i next0 = _mm512_xor_si512(_mm512_xor_si512(high1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
      const __m512i next2 = _mm512_xor_si512(_mm512_xor_si512(high0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
      c0 = next0;
      c1 = low1;
      c2 = next2;
      c3 = low0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const __m512 value =
        _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAllLanes, _mm512_maskz_srli_epi32(kAllLanes, c0, 8)), _mm512_set1_ps(1.0f / 16777216.0f));
    _mm512_storeu_ps(u + i, value);
  }
  if (i < count) uniform_block_avx2(seed, stream, first_index + static_cast<uint64_t>(i), count - i, u + i);
}

void draw_uniforms(uint64_t seed, uint64_t stream, uint64_t first_index, int64_t count, float* u) {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  if (has_avx512)
    uniform_block_avx512(seed, stream, first_index, count, u);
  else if (has_avx2)
    uniform_block_avx2(seed, stream, first_index, count, u);
  else
    uniform_block(seed, stream, first_index, count, u);
}

// Columns are drawn in blocks of this many (a stack buffer of uniforms per block).
constexpr int64_t kDrawBlock = 64;

// What one call of an epilogue does to every row; the flags are fixed per call.
struct EpilogueRows {
  Matrix<const float> in;      // (n, f); may alias `out` (in place)
  Matrix<float> out;           // (n, f)
  const float* bias;           // (f), read when kBias
  const int64_t* row_gid;      // (n), read when kDrop
  Matrix<float> mask;          // (n, f), written when kRecord
  float dropout, keep_scale;
  uint64_t seed, rng_stream;
};

// Eight floats as a GCC/Clang vector (one AVX2 register, two SSE registers on baseline x86-64); `?:` on it
// selects per lane. Written with vectors because GCC does not if-convert (vectorise) the loop's selects.
typedef float Floats8 __attribute__((vector_size(32)));

// One element (F = float) or eight (F = Floats8) of the epilogue: out = dropout(relu(pre)), mask = the
// factor applied. A dead unit is 0, but NaN stays NaN so that the caller's NaN check sees it.
// Always inlined: the AVX2 clone of epilogue_rows passes Floats8 in ymm registers, a separately compiled baseline
// copy (as -O0 leaves it) would take them in memory, and the values it read were garbage (a Debug/ASan build
// failed the dropout tests; GCC's -Wpsabi case).
template <bool kRelu, bool kDrop, typename F>
__attribute__((always_inline)) inline void epilogue_lanes(F pre, F uniform, F p, F keep_scale, F& out, F& mask) {
  const F zero = F{}, one = zero + 1.0f;
  const F factor = kDrop ? (uniform >= p ? keep_scale : zero) : one;
  if (kRelu) {
    const F kept = pre * factor, dead = pre != pre ? pre : zero;
    out = pre > zero ? kept : dead;
    mask = pre > zero ? factor : zero;
  } else {
    out = pre * factor;
    mask = factor;
  }
}

// out = dropout(relu(in + bias)) row by row (each flag off = that step skipped), mask = the factor applied.
// The flags are template parameters and the elements go eight at a time through selects, not branches (a
// branch on the sign of each pre-activation mispredicts about half the time). Compiled for AVX2 and for
// baseline x86-64. Every element gets the same float operations whatever its lane (pre = in + bias;
// pre * factor), so results do not depend on the clone or the thread count.
template <int kFlags>
__attribute__((target_clones("avx2", "default"))) void epilogue_rows(const EpilogueRows& job) {
  constexpr bool kBias = kFlags & 1, kRelu = kFlags & 2, kDrop = kFlags & 4, kRecord = kFlags & 8;
  const int64_t width = job.out.cols;
  constexpr int64_t kLanes = 8;
  const Floats8 p8 = Floats8{} + job.dropout, keep8 = Floats8{} + job.keep_scale;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < job.out.rows; ++r) {
    const float* in_row = job.in.row(r);  // may alias out_row (in place)
    float* out_row = job.out.row(r);
    float* mask_row = kRecord ? job.mask.row(r) : nullptr;
    alignas(64) float uniforms[kDrawBlock] = {};
    for (int64_t c0 = 0; c0 < width; c0 += kDrawBlock) {
      const int64_t count = std::min(kDrawBlock, width - c0);
      if (kDrop)
        draw_uniforms(job.seed, job.rng_stream, static_cast<uint64_t>(job.row_gid[r]) * width + c0, count, uniforms);
      int64_t j = 0;
      for (; j + kLanes <= count; j += kLanes) {
        const int64_t c = c0 + j;
        Floats8 pre, bias{}, uniform, out, mask;
        std::memcpy(&pre, in_row + c, sizeof pre);
        if (kBias) std::memcpy(&bias, job.bias + c, sizeof bias);
        std::memcpy(&uniform, uniforms + j, sizeof uniform);
        if (kBias) pre = pre + bias;
        epilogue_lanes<kRelu, kDrop>(pre, uniform, p8, keep8, out, mask);
        std::memcpy(out_row + c, &out, sizeof out);
        if (kRecord) std::memcpy(mask_row + c, &mask, sizeof mask);
      }
      for (; j < count; ++j) {
        const int64_t c = c0 + j;
        float out, mask;
        epilogue_lanes<kRelu, kDrop>(kBias ? in_row[c] + job.bias[c] : in_row[c], uniforms[j], job.dropout,
                                     job.keep_scale, out, mask);
        out_row[c] = out;
        if (kRecord) mask_row[c] = mask;
      }
    }
  }
}

template <int... kFlags>
void run_epilogue_rows(const EpilogueRows& job, int flags, std::integer_sequence<int, kFlags...>) {
  using Rows = void (*)(const EpilogueRows&);
  static constexpr Rows kTable[] = {&epilogue_rows<kFlags>...};
  kTable[flags](job);
}

void run_epilogue(const EpilogueRows& job, bool bias, bool relu, bool drop, bool record) {
  const int flags = (bias ? 1 : 0) | (relu ? 2 : 0) | (drop ? 4 : 0) | (record ? 8 : 0);
  run_epilogue_rows(job, flags, std::make_integer_sequence<int, 16>{});
}

}  // namespace

void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream) {
  detail::require_host(h, "bias_relu_dropout h");
  detail::require_host(bias, "bias_relu_dropout bias");
  detail::require_host(mask, "bias_relu_dropout mask");
  HALOGEN_ASSERT(bias.size == 0 || bias.size == h.cols, "bias has %lld entries, h has %lld columns",
                 (long long)bias.size, (long long)h.cols);
  const bool record = mask.rows != 0;
  if (record) detail::require_same_shape(h, mask, "h", "mask");
  check_dropout(params, row_gid, h.rows);
  const bool drop = params.dropout > 0.0f;
  const EpilogueRows job{h, h, bias.data, row_gid.data, mask, params.dropout,
                         drop ? 1.0f / (1.0f - params.dropout) : 1.0f, params.seed, params.rng_stream};
  run_epilogue(job, bias.size != 0, params.relu, drop, record);
}

void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params,
             Matrix<float> out, Matrix<float> mask, Stream) {
  detail::require_host(x, "dropout x");
  detail::require_host(out, "dropout out");
  detail::require_host(mask, "dropout mask");
  detail::require_same_shape(x, out, "x", "out");
  const bool record = mask.rows != 0;
  if (record) detail::require_same_shape(x, mask, "x", "mask");
  check_dropout(params, row_gid, x.rows);
  const bool drop = params.dropout > 0.0f;
  const EpilogueRows job{x, out, nullptr, row_gid.data, mask, params.dropout,
                         drop ? 1.0f / (1.0f - params.dropout) : 1.0f, params.seed, params.rng_stream};
  run_epilogue(job, /*bias=*/false, /*relu=*/false, drop, record);
}

void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream) {
  detail::require_host(grad, "apply_mask grad");
  detail::require_host(mask, "apply_mask mask");
  detail::require_same_shape(grad, mask, "grad", "mask");
  const int64_t width = grad.cols;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < grad.rows; ++r) {
    float* __restrict__ g = grad.row(r);
    const float* __restrict__ m = mask.row(r);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) g[c] *= m[c];
  }
}

}  // namespace halogen::kernels::cpu
