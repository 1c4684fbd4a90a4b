#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). A number is a pure function of
// (seed, stream, index): `stream` says what it is for (dropout of layer l in epoch e, weight init of tensor k,
// negative sampling, ...) and `index` says which element (e.g. global_vertex * width + column). So every rank,
// and the CPU and CUDA kernels alike, draw identical numbers for the same purpose, whoever draws them.
// Header-only and usable from CUDA device code (no CUDA header is included).
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define HALOGEN_HD __host__ __device__ __forceinline__
#else
#define HALOGEN_HD inline
#endif

namespace halogen::rng {

struct Philox4 {
  uint32_t v[4];
};

HALOGEN_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  return static_cast<uint32_t>(product);
}

// Philox4x32 with 10 rounds: counter (4 words) + key (2 words) -> 4 random words.
HALOGEN_HD Philox4 philox4x32(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(kMul0, c0, &hi0);
    const uint32_t lo1 = mulhilo(kMul1, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Four 32-bit words for (seed, stream, index). Counter = (index lo, index hi, stream lo, stream hi).
HALOGEN_HD Philox4 bits(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox4x32(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                    static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32),
                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform in [0, 1) with 24 bits (exactly representable in float).
HALOGEN_HD float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(bits(seed, stream, index).v[0] >> 8) * (1.0f / 16777216.0f);
}

// Uniform 64-bit integer.
HALOGEN_HD uint64_t uniform_u64(uint64_t seed, uint64_t stream, uint64_t index) {
  const Philox4 r = bits(seed, stream, index);
  return (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
}

// Standard normal by Box-Muller on two words of the same draw.
HALOGEN_HD float normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const Philox4 r = bits(seed, stream, index);
  const float u1 = (static_cast<float>(r.v[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
  const float u2 = static_cast<float>(r.v[1] >> 8) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cosf(6.2831853071795864f * u2);
}

// Dropout masks. Element `index` (global row id * width + column of the matrix being dropped) is kept when its
// 32-bit word is >= dropout_threshold(p). The words come four per Philox call: element `index` takes word
// (index mod 4) of bits(seed, stream, index / 4), so four neighbouring columns cost one call. Keep probability
// (2^32 - t) / 2^32 with t = ceil(p 2^32): exactly 1 - p for every float p >= 2^-9, within 2^-32 below.
HALOGEN_HD uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(ceil(static_cast<double>(p) * 4294967296.0));  // p in [0, 1): fits in 32 bits
}
HALOGEN_HD uint32_t dropout_word(uint64_t seed, uint64_t stream, uint64_t index) {
  const Philox4 r = bits(seed, stream, index >> 2);
  // Selects instead of r.v[index & 3]: a dynamic index would put r in CUDA local memory.
  return (index & 2) ? ((index & 1) ? r.v[3] : r.v[2]) : ((index & 1) ? r.v[1] : r.v[0]);
}
HALOGEN_HD bool dropout_keep(uint64_t seed, uint64_t stream, uint64_t index, uint32_t threshold) {
  return dropout_word(seed, stream, index) >= threshold;
}

// Four words for a PAIR of 64-bit ids (a, b) under a 64-bit key: the pair is the whole Philox counter, so draws
// keyed by two ids need no product a * N + b (which could overflow). Used for per-edge draws keyed by the
// edge's (destination, source) global vertex ids, with key = uniform_u64(seed, stream, group).
HALOGEN_HD Philox4 pair_bits(uint64_t key, uint64_t a, uint64_t b) {
  return philox4x32(static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                    static_cast<uint32_t>(b >> 32), static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
}

// One 32-bit word as a uniform in [0, 1) with 24 bits (as uniform()).
HALOGEN_HD float word_uniform(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

// A stream id from up to four small tags (purpose, epoch, layer, ...), so call sites name what they draw for.
HALOGEN_HD uint64_t stream_id(uint32_t purpose, uint32_t a = 0, uint32_t b = 0, uint32_t c = 0) {
  const Philox4 r = philox4x32(purpose, a, b, c, 0x48414C4Fu /* "HALO" */, 0x47454E31u);
  return (static_cast<uint64_t>(r.v[1]) << 32) | r.v[0];
}

// Purposes for stream_id(); append, never renumber (changing one changes every run's numbers).
enum Purpose : uint32_t {
  kWeightInit = 1,
  kDropout = 2,
  kGraphGenerate = 3,
  kSplit = 4,
  kFeatures = 5,
  kPartition = 6,
  kNegativeSampling = 7,
  kBenchData = 8,
  kAttentionDropout = 9,
  kGatFeatureDropout = 10,  // GAT with per-head dropout (nn/gat_conv.h): (epoch, layer, 0 or 1 + head)
};

}  // namespace halogen::rng
