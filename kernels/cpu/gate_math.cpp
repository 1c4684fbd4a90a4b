// Compiled with -ffast-math -fopenmp-simd (kernels/CMakeLists.txt): only these loops, so that no other
// kernel is reassociated.
#include "kernels/cpu/gate_math.h"

#include <cmath>

namespace halogen::kernels::cpu::detail {

void sigmoid_run(const float* x, float* y, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void tanh_run(const float* x, float* y, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
}

// Cloned for AVX-512 and AVX2 so that the loop calls libmvec's 16- or 8-wide expf rather than the 4-wide SSE
// one of the baseline build. Blocks of 16, the tail padded to 16: every element goes through the same vector
// function whatever its position (no scalar expf for a remainder), so the fused attention's exps equal
// edge_softmax's bit for bit.
__attribute__((target_clones("avx512f", "avx2", "default"))) void exp_run(const float* x, float* y,
                                                                           int64_t count) {
  constexpr int64_t kBlock = 16;
  int64_t i = 0;
  for (; i + kBlock <= count; i += kBlock) {
#pragma omp simd
    for (int64_t j = 0; j < kBlock; ++j) y[i + j] = std::exp(x[i + j]);
  }
  if (i < count) {
    float tail[kBlock] = {};
    for (int64_t j = 0; j < count - i; ++j) tail[j] = x[i + j];
#pragma omp simd
    for (int64_t j = 0; j < kBlock; ++j) tail[j] = std::exp(tail[j]);
    for (int64_t j = 0; j < count - i; ++j) y[i + j] = tail[j];
  }
}

}  // namespace halogen::kernels::cpu::detail
