// Row-wise epilogues of a layer: bias, ReLU, dropout (fused into one pass), their backward, and the bias
// gradient. Dropout decisions come from the counter-based RNG keyed by global row id, so they do not depend
// on the rank, the partition or the thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

namespace {

// grad_bias[c] += the column sums of the rows row(r) gives (each row after whatever row() does to it first):
// fixed blocks of rows summed in parallel, each block's rows in order, then the blocks in order, so the bits do
// not depend on the thread count. grad_bias null: row() runs on every row and nothing is summed.
template <typename Row>
void block_column_sums(int64_t rows, int64_t width, float* grad_bias, Row row) {
  const int64_t blocks = (rows + detail::kReductionBlockRows - 1) / detail::kReductionBlockRows;
  std::vector<float> block_sums(grad_bias != nullptr ? static_cast<size_t>(blocks * width) : 0, 0.0f);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    float* __restrict__ sums = grad_bias != nullptr ? block_sums.data() + block * width : nullptr;
    const int64_t end = std::min(rows, (block + 1) * detail::kReductionBlockRows);
    for (int64_t r = block * detail::kReductionBlockRows; r < end; ++r) {
      const float* __restrict__ x = row(r);
      if (sums == nullptr) continue;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) sums[c] += x[c];
    }
  }
  if (grad_bias == nullptr) return;
  for (int64_t c = 0; c < width; ++c) {
    double total = 0.0;
    for (int64_t block = 0; block < blocks; ++block) total += block_sums[block * width + c];
    grad_bias[c] += static_cast<float>(total);
  }
}

}  // namespace

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
  block_column_sums(grad_out.rows, width, grad_bias.data, [&](int64_t r) { return grad_out.row(r); });
}

namespace {

void check_dropout(const EpilogueParams& params, Span<const int64_t> row_gid, int64_t rows) {
  HALOGEN_ASSERT(params.dropout >= 0.0f && params.dropout < 1.0f, "dropout probability %g is not in [0, 1)",
                 static_cast<double>(params.dropout));
  detail::require_host(row_gid, "dropout row_gid");
  HALOGEN_ASSERT(params.dropout == 0.0f || row_gid.size == rows, "row_gid has %lld entries for %lld rows",
                 (long long)row_gid.size, (long long)rows);
}

// The dropout words of rng::dropout_word, four per Philox4x32-10 call:
//   words[4 k + j] = word j of rng::bits(seed, stream, first_counter + k)   for k < counters, j < 4
// so that the words of elements first_counter * 4 ... lie in element order. Bit for bit the same as core/rng.h
// (the tests check), in three forms: one call at a time (baseline x86-64, and the tails), AVX2 (8 counters per
// step) and AVX-512 (16 per step), picked once by draw_words.
void philox_words(uint64_t seed, uint64_t stream, uint64_t first_counter, int64_t counters, uint32_t* words) {
  for (int64_t k = 0; k < counters; ++k) {
    const rng::Philox4 r = rng::bits(seed, stream, first_counter + static_cast<uint64_t>(k));
    std::memcpy(words + 4 * k, r.v, sizeof r.v);
  }
}

// AVX2: the 32x32->64-bit products of Philox as two _mm256_mul_epu32 (even and odd lanes) whose halves are
// blended back; then the four word vectors are transposed into element order (unpacks within 128-bit lanes,
// then 128-bit lane permutes). A step whose counters' low word would wrap is left to philox_words (the carry).
// The ten Philox4x32 rounds on eight counters at once: lane i of (c0, c1, c2, c3) holds counter i's four words
// (counter low, counter high, stream low, stream high) and ends holding its four output words.
__attribute__((target("avx2"))) inline void philox_rounds_avx2(uint64_t seed, __m256i& c0, __m256i& c1, __m256i& c2,
                                                               __m256i& c3) {
  const __m256i multiplier0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i multiplier1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
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
    c0 = _mm256_xor_si256(_mm256_xor_si256(high1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    c1 = low1;
    c2 = _mm256_xor_si256(_mm256_xor_si256(high0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c3 = low0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// words[i] = rng::dropout_word(seed, stream, index[i]) for eight arbitrary element indices (keyed dropout of a
// column of nonzeros: each needs its own Philox call, run eight at a time, keeping the word of its lane).
__attribute__((target("avx2"))) void keyed_words_avx2(uint64_t seed, uint64_t stream, const int64_t* index,
                                                      uint32_t* words) {
  alignas(32) uint32_t low[8], high[8], pick[8];
  for (int i = 0; i < 8; ++i) {
    const uint64_t counter = static_cast<uint64_t>(index[i]) >> 2;
    low[i] = static_cast<uint32_t>(counter);
    high[i] = static_cast<uint32_t>(counter >> 32);
    pick[i] = static_cast<uint32_t>(index[i]) & 3u;
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(low));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(high));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  philox_rounds_avx2(seed, c0, c1, c2, c3);
  const __m256i which = _mm256_load_si256(reinterpret_cast<const __m256i*>(pick));
  __m256i word = c0;
  word = _mm256_blendv_epi8(word, c1, _mm256_cmpeq_epi32(which, _mm256_set1_epi32(1)));
  word = _mm256_blendv_epi8(word, c2, _mm256_cmpeq_epi32(which, _mm256_set1_epi32(2)));
  word = _mm256_blendv_epi8(word, c3, _mm256_cmpeq_epi32(which, _mm256_set1_epi32(3)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words), word);
}

__attribute__((target("avx2"))) void philox_words_avx2(uint64_t seed, uint64_t stream, uint64_t first_counter,
                                                       int64_t counters, uint32_t* words) {
  const __m256i stream0 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m256i stream1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t k = 0;
  for (; k + 8 <= counters; k += 8) {
    const uint64_t counter = first_counter + static_cast<uint64_t>(k);
    if (static_cast<uint32_t>(counter) > 0xFFFFFFFFu - 7u) {  // the low word wraps inside this step
      philox_words(seed, stream, counter, 8, words + 4 * k);
      continue;
    }
    __m256i c0 = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(counter))), lane);
    __m256i c1 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(counter >> 32)));
    __m256i c2 = stream0, c3 = stream1;
    philox_rounds_avx2(seed, c0, c1, c2, c3);
    // Lane i of c_j is word j of counter i. After the unpacks, u_m holds counters m (low half) and m + 4.
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i* out = reinterpret_cast<__m256i*>(words + 4 * k);
    _mm256_storeu_si256(out + 0, _mm256_permute2x128_si256(u0, u1, 0x20));  // counters 0, 1
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));  // 2, 3
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));  // 4, 5
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));  // 6, 7
  }
  if (k < counters) philox_words(seed, stream, first_counter + static_cast<uint64_t>(k), counters - k, words + 4 * k);
}

// AVX-512, 16 counters per step: as philox_words_avx2, with mask blends, and the transpose finished by 128-bit
// lane shuffles. The zero-masked forms of the AVX-512 intrinsics with every lane selected: the plain forms pass
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

__attribute__((target("avx512f"))) void philox_words_avx512(uint64_t seed, uint64_t stream, uint64_t first_counter,
                                                           int64_t counters, uint32_t* words) {
  const __m512i multiplier0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i multiplier1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m512i stream0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  const __m512i stream1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t k = 0;
  for (; k + 16 <= counters; k += 16) {
    const uint64_t counter = first_counter + static_cast<uint64_t>(k);
    if (static_cast<uint32_t>(counter) > 0xFFFFFFFFu - 15u) {  // the low word wraps inside this step
      philox_words(seed, stream, counter, 16, words + 4 * k);
      continue;
    }
    __m512i c0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(counter))), lane);
    __m512i c1 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(counter >> 32)));
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
      c0 = _mm512_xor_si512(_mm512_xor_si512(high1, c1), _mm512_set1_epi32(static_cast<int>(k0)));
      c1 = low1;
      c2 = _mm512_xor_si512(_mm512_xor_si512(high0, c3), _mm512_set1_epi32(static_cast<int>(k1)));
      c3 = low0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    // Lane i of c_j is word j of counter i. After the unpacks, 128-bit lane l of u_m holds counter 4 l + m;
    // the shuffles then gather lane l of u_0..u_3 (counters 4 l .. 4 l + 3) into output vector l.
    const __m512i t0 = _mm512_maskz_unpacklo_epi32(kAllLanes, c0, c1);
    const __m512i t1 = _mm512_maskz_unpackhi_epi32(kAllLanes, c0, c1);
    const __m512i t2 = _mm512_maskz_unpacklo_epi32(kAllLanes, c2, c3);
    const __m512i t3 = _mm512_maskz_unpackhi_epi32(kAllLanes, c2, c3);
    const __m512i u0 = _mm512_maskz_unpacklo_epi64(kAllPairs, t0, t2);
    const __m512i u1 = _mm512_maskz_unpackhi_epi64(kAllPairs, t0, t2);
    const __m512i u2 = _mm512_maskz_unpacklo_epi64(kAllPairs, t1, t3);
    const __m512i u3 = _mm512_maskz_unpackhi_epi64(kAllPairs, t1, t3);
    const __m512i v0 = _mm512_maskz_shuffle_i32x4(kAllLanes, u0, u1, 0x44);  // u0.l0 u0.l1 u1.l0 u1.l1
    const __m512i v1 = _mm512_maskz_shuffle_i32x4(kAllLanes, u0, u1, 0xEE);  // u0.l2 u0.l3 u1.l2 u1.l3
    const __m512i v2 = _mm512_maskz_shuffle_i32x4(kAllLanes, u2, u3, 0x44);
    const __m512i v3 = _mm512_maskz_shuffle_i32x4(kAllLanes, u2, u3, 0xEE);
    uint32_t* out = words + 4 * k;
    _mm512_storeu_si512(out + 0, _mm512_maskz_shuffle_i32x4(kAllLanes, v0, v2, 0x88));   // counters 0..3
    _mm512_storeu_si512(out + 16, _mm512_maskz_shuffle_i32x4(kAllLanes, v0, v2, 0xDD));  // 4..7
    _mm512_storeu_si512(out + 32, _mm512_maskz_shuffle_i32x4(kAllLanes, v1, v3, 0x88));  // 8..11
    _mm512_storeu_si512(out + 48, _mm512_maskz_shuffle_i32x4(kAllLanes, v1, v3, 0xDD));  // 12..15
  }
  if (k < counters)
    philox_words_avx2(seed, stream, first_counter + static_cast<uint64_t>(k), counters - k, words + 4 * k);
}

// Columns are drawn in blocks of this many (a stack buffer of words per block; one block per 128-wide row).
constexpr int64_t kDrawBlock = 128;

// words[i] = rng::dropout_word(seed, stream, first_index + i) for i < count <= kDrawBlock; `buffer` holds
// kDrawBlock + 8 words, and the result points into it. Every Philox call gives the words of four elements.
const uint32_t* draw_words(uint64_t seed, uint64_t stream, uint64_t first_index, int64_t count, uint32_t* buffer) {
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  const uint64_t first_counter = first_index >> 2;
  const int64_t counters = static_cast<int64_t>(((first_index + static_cast<uint64_t>(count) - 1) >> 2) - first_counter) + 1;
  if (has_avx512)
    philox_words_avx512(seed, stream, first_counter, counters, buffer);
  else if (has_avx2)
    philox_words_avx2(seed, stream, first_counter, counters, buffer);
  else
    philox_words(seed, stream, first_counter, counters, buffer);
  return buffer + (first_index & 3);
}

// The dropout words of columns [c0, c0 + count) of the row with global id `gid` (`width` columns), or `buffer`
// (zeros, not to be read) without dropout. No lambda over the block: a row loop inlined into one ran 3x slower.
inline const uint32_t* block_words(const EpilogueParams& params, bool drop, int64_t gid, int64_t width, int64_t c0,
                                   int64_t count, uint32_t* buffer) {
  return drop ? draw_words(params.seed, params.rng_stream, static_cast<uint64_t>(gid) * width + c0, count, buffer)
              : buffer;
}

// What one call of an epilogue does to every row; the flags are fixed per call.
struct EpilogueRows {
  Matrix<const float> in;      // (n, f); may alias `out` (in place)
  Matrix<float> out;           // (n, f)
  const float* bias;           // (f), read when kBias
  const int64_t* row_gid;      // (n), read when kDrop
  Matrix<float> mask;          // (n, f), written when kRecord
  uint32_t threshold;           // rng::dropout_threshold(p): an element is kept when its word is >= this
  float keep_scale;             // 1 / (1 - p)
  uint64_t seed, rng_stream;
};

// Eight floats as a GCC/Clang vector (one AVX2 register, two SSE registers on baseline x86-64); `?:` on it
// selects per lane. Written with vectors because GCC does not if-convert (vectorise) the loop's selects.
typedef float Floats8 __attribute__((vector_size(32)));
typedef uint32_t Words8 __attribute__((vector_size(32)));

// One element (F = float, W = uint32_t) or eight (Floats8, Words8) of the epilogue: out = dropout(relu(pre)),
// mask = the factor applied; `word` is the element's rng::dropout_word. A dead unit is 0, but NaN stays NaN so that the caller's NaN check sees it.
// Always inlined: the AVX2 clone of epilogue_rows passes Floats8 in ymm registers, a separately compiled baseline
// copy (as -O0 leaves it) would take them in memory, and the values it read were garbage (a Debug/ASan build
// failed the dropout tests; GCC's -Wpsabi case).
template <bool kRelu, bool kDrop, typename F, typename W>
__attribute__((always_inline)) inline void epilogue_lanes(F pre, W word, W threshold, F keep_scale, F& out, F& mask) {
  const F zero = F{}, one = zero + 1.0f;
  const F factor = kDrop ? (word >= threshold ? keep_scale : zero) : one;
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
  const Words8 threshold8 = Words8{} + job.threshold;
  const Floats8 keep8 = Floats8{} + job.keep_scale;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < job.out.rows; ++r) {
    const float* in_row = job.in.row(r);  // may alias out_row (in place)
    float* out_row = job.out.row(r);
    float* mask_row = kRecord ? job.mask.row(r) : nullptr;
    alignas(64) uint32_t buffer[kDrawBlock + 8] = {};
    const uint32_t* words = buffer;
    for (int64_t c0 = 0; c0 < width; c0 += kDrawBlock) {
      const int64_t count = std::min(kDrawBlock, width - c0);
      if (kDrop)
        words = draw_words(job.seed, job.rng_stream, static_cast<uint64_t>(job.row_gid[r]) * width + c0, count, buffer);
      int64_t j = 0;
      for (; j + kLanes <= count; j += kLanes) {
        const int64_t c = c0 + j;
        Floats8 pre, bias{}, out, mask;
        Words8 word;
        std::memcpy(&pre, in_row + c, sizeof pre);
        if (kBias) std::memcpy(&bias, job.bias + c, sizeof bias);
        std::memcpy(&word, words + j, sizeof word);
        if (kBias) pre = pre + bias;
        epilogue_lanes<kRelu, kDrop>(pre, word, threshold8, keep8, out, mask);
        std::memcpy(out_row + c, &out, sizeof out);
        if (kRecord) std::memcpy(mask_row + c, &mask, sizeof mask);
      }
      for (; j < count; ++j) {
        const int64_t c = c0 + j;
        float out, mask;
        epilogue_lanes<kRelu, kDrop>(kBias ? in_row[c] + job.bias[c] : in_row[c], words[j], job.threshold,
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

// Dropout alone on a single column whose "rows" are arbitrary element indices (the nonzeros of sparse features
// keyed gid * F + c, nn/model.h): a Philox call per element, eight at a time with AVX2 instead of one row of the
// general path (a block of words for one element) each. Same decisions and the same float operation
// (x * factor) as epilogue_rows.
void keyed_column_dropout(const EpilogueRows& job, bool record) {
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  const int64_t rows = job.out.rows;
  constexpr int64_t kBlock = 8;
#pragma omp parallel for schedule(static)
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t count = std::min(kBlock, rows - r0);
    uint32_t words[kBlock];
    if (has_avx2 && count == kBlock) {
      keyed_words_avx2(job.seed, job.rng_stream, job.row_gid + r0, words);
    } else {
      for (int64_t i = 0; i < count; ++i)
        words[i] = rng::dropout_word(job.seed, job.rng_stream, static_cast<uint64_t>(job.row_gid[r0 + i]));
    }
    for (int64_t i = 0; i < count; ++i) {
      const float factor = words[i] >= job.threshold ? job.keep_scale : 0.0f;
      job.out.row(r0 + i)[0] = job.in.row(r0 + i)[0] * factor;
      if (record) job.mask.row(r0 + i)[0] = factor;
    }
  }
}

void run_epilogue(const EpilogueRows& job, bool bias, bool relu, bool drop, bool record) {
  if (drop && !bias && !relu && job.out.cols == 1) {
    keyed_column_dropout(job, record);
    return;
  }
  const int flags = (bias ? 1 : 0) | (relu ? 2 : 0) | (drop ? 4 : 0) | (record ? 8 : 0);
  run_epilogue_rows(job, flags, std::make_integer_sequence<int, 16>{});
}

}  // namespace

bool draw_dropout_words(uint64_t seed, uint64_t stream, uint64_t first_counter, int64_t counters,
                        int instruction_set, uint32_t* words) {
  switch (instruction_set) {
    case 0:
      philox_words(seed, stream, first_counter, counters, words);
      return true;
    case 1:
      if (!__builtin_cpu_supports("avx2")) return false;
      philox_words_avx2(seed, stream, first_counter, counters, words);
      return true;
    case 2:
      if (!__builtin_cpu_supports("avx512f")) return false;
      philox_words_avx512(seed, stream, first_counter, counters, words);
      return true;
    default:
      return false;
  }
}

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
  const EpilogueRows job{h, h, bias.data, row_gid.data, mask, rng::dropout_threshold(params.dropout),
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
  const EpilogueRows job{x, out, nullptr, row_gid.data, mask, rng::dropout_threshold(params.dropout),
                         drop ? 1.0f / (1.0f - params.dropout) : 1.0f, params.seed, params.rng_stream};
  run_epilogue(job, /*bias=*/false, /*relu=*/false, drop, record);
}

namespace {

// The row loop of dropout_bf16 (Out = float: out = float(x) * factor) and dropout_scale_round_bf16 (Out = Bf16:
// out = bf16(float(x) * factor * scale[r]), no scale when `scale` is empty), which differ only in what they store.
template <typename Out>
void dropout_bf16_rows(Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params,
                       Span<const float> scale, Matrix<Out> out) {
  const bool drop = params.dropout > 0.0f;
  const uint32_t threshold = rng::dropout_threshold(params.dropout);
  const float keep_scale = drop ? 1.0f / (1.0f - params.dropout) : 1.0f;
  const int64_t width = x.cols;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    const uint16_t* in_row = reinterpret_cast<const uint16_t*>(x.row(r));
    Out* out_row = out.row(r);
    const float row_scale = scale.size > 0 ? scale.data[r] : 1.0f;
    alignas(64) uint32_t buffer[kDrawBlock + 8] = {};
    for (int64_t c0 = 0; c0 < width; c0 += kDrawBlock) {
      const int64_t count = std::min(kDrawBlock, width - c0);
      const uint32_t* words = block_words(params, drop, drop ? row_gid[r] : 0, width, c0, count, buffer);
      for (int64_t j = 0; j < count; ++j) {
        const uint32_t u = static_cast<uint32_t>(in_row[c0 + j]) << 16;
        float value;
        std::memcpy(&value, &u, sizeof value);
        const float factor = drop ? (words[j] >= threshold ? keep_scale : 0.0f) : 1.0f;
        if constexpr (std::is_same_v<Out, float>)
          out_row[c0 + j] = value * factor;  // epilogue_lanes' pre * factor
        else  // dropout_bf16's product, then scale_round_bf16's
          out_row[c0 + j] = to_bf16(value * factor * row_scale);
      }
    }
  }
}

}  // namespace

void dropout_bf16(Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params,
                  Matrix<float> out, Stream) {
  detail::require_host(x, "dropout_bf16 x");
  detail::require_host(out, "dropout_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  check_dropout(params, row_gid, x.rows);
  dropout_bf16_rows(x, row_gid, params, Span<const float>{}, out);
}

void dropout_scale_round_bf16(Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params,
                              Span<const float> scale, Matrix<Bf16> out, Stream) {
  detail::require_host(x, "dropout_scale_round_bf16 x");
  detail::require_host(out, "dropout_scale_round_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  check_dropout(params, row_gid, x.rows);
  if (scale.size > 0) detail::require_host(scale, "dropout_scale_round_bf16 scale");
  HALOGEN_ASSERT(scale.size == 0 || scale.size == x.rows, "dropout_scale_round_bf16: %lld scales for %lld rows",
                 (long long)scale.size, (long long)x.rows);
  dropout_bf16_rows(x, row_gid, params, scale, out);
}

// GAT's hidden-layer epilogue (kernels/ops.h "GAT"). The dropout words come from draw_words, four elements per
// Philox call (rng::dropout_keep's decisions, one call per element before).
void elu_dropout(Matrix<float> h, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> mask,
                 Stream) {
  detail::require_host(h, "elu_dropout h");
  const bool with_mask = mask.rows > 0;
  if (with_mask) {
    detail::require_host(mask, "elu_dropout mask");
    detail::require_same_shape(mask, h, "elu_dropout mask", "h");
  }
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "dropout probability %g is not in [0, 1)", static_cast<double>(p));
  detail::require_host(row_gid, "elu_dropout row_gid");
  HALOGEN_ASSERT(p == 0.0f || row_gid.size == h.rows, "row_gid has %lld entries for %lld rows",
                 (long long)row_gid.size, (long long)h.rows);
  const bool drop = p > 0.0f;
  const float scale = drop ? 1.0f / (1.0f - p) : 1.0f;
  const uint32_t threshold = rng::dropout_threshold(p);
  const int64_t f = h.cols;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < h.rows; ++r) {
    float* x = h.row(r);
    alignas(64) uint32_t buffer[kDrawBlock + 8] = {};
    for (int64_t c0 = 0; c0 < f; c0 += kDrawBlock) {
      const int64_t count = std::min(kDrawBlock, f - c0);
      const uint32_t* words = block_words(params, drop, drop ? row_gid[r] : 0, f, c0, count, buffer);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t c = c0 + j;
        const float factor = drop ? (words[j] >= threshold ? scale : 0.0f) : 1.0f;
        const float value = x[c];
        const float y = value > 0.0f ? value : std::expm1(value);
        const float slope = value > 0.0f ? 1.0f : std::exp(value);
        x[c] = y * factor;
        if (with_mask) mask.row(r)[c] = factor * slope;
      }
    }
  }
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

void relu_dropout_backward(Matrix<float> grad, Matrix<const float> out, float dropout, Span<float> grad_bias,
                           Stream) {
  detail::require_host(grad, "relu_dropout_backward grad");
  detail::require_host(out, "relu_dropout_backward out");
  detail::require_host(grad_bias, "relu_dropout_backward grad_bias");
  detail::require_same_shape(grad, out, "grad", "out");
  HALOGEN_ASSERT(dropout >= 0.0f && dropout < 1.0f, "dropout probability %g is not in [0, 1)",
                 static_cast<double>(dropout));
  HALOGEN_ASSERT(grad_bias.size == 0 || grad_bias.size == grad.cols,
                 "grad_bias has %lld entries, grad has %lld columns", (long long)grad_bias.size, (long long)grad.cols);
  const int64_t width = grad.cols;
  if (grad.rows == 0 || width == 0) return;
  const float keep_scale = dropout > 0.0f ? 1.0f / (1.0f - dropout) : 1.0f;
  // bias_backward's column sums, each row scaled first (while it is in cache). g * factor, not a select of 0:
  // the same product as apply_mask (NaN and -0 included). The factor is keep_scale x 1 or x 0 (exactly
  // keep_scale or 0), without a branch; it vectorises with -fno-trapping-math (kernels/CMakeLists.txt).
  block_column_sums(grad.rows, width, grad_bias.size != 0 ? grad_bias.data : nullptr, [&](int64_t r) {
    float* __restrict__ g = grad.row(r);
    const float* __restrict__ o = out.row(r);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) g[c] *= keep_scale * static_cast<float>(o[c] > 0.0f);
    return static_cast<const float*>(g);
  });
}

}  // namespace halogen::kernels::cpu
