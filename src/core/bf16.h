#pragma once
// BF16 storage: the upper 16 bits of an IEEE binary32 (1 sign, 8 exponent, 7 mantissa bits). Halogen stores
// features, saved activations and halo messages in it under `--precision bf16` (DESIGN.md "Precision"); every
// product widens it back to FP32 and accumulates in FP32. A distinct type, not a bare uint16_t, so that a
// BF16 matrix cannot be handed to an op that expects FP32 or integer data.
//
// Rounding is to nearest, ties to even, on every backend and instruction set; NaN stays NaN (quiet, sign and
// top payload bits kept: a plain round would carry a NaN with a low payload over into Inf). Widening is exact
// (a shift). Denormals are kept (the AVX512-BF16 conversion instruction flushes them, so it is not used).
#include <cstdint>
#include <cstring>

namespace halogen {

struct Bf16 {
  uint16_t bits = 0;
};
static_assert(sizeof(Bf16) == 2, "Bf16 is two bytes, as in every file and message");

inline uint16_t bf16_bits_from_float(float value) {
  uint32_t u;
  std::memcpy(&u, &value, sizeof(u));
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (carries into the exponent; max finite -> Inf)
  return static_cast<uint16_t>(u >> 16);
}

inline Bf16 to_bf16(float value) {
  return Bf16{bf16_bits_from_float(value)};
}

inline float to_float(Bf16 value) {
  const uint32_t u = static_cast<uint32_t>(value.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The FP32 value nearest to `value` that BF16 can hold (to_float(to_bf16(value))).
inline float round_to_bf16(float value) {
  return to_float(to_bf16(value));
}

}  // namespace halogen
