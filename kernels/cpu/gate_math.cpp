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
// one of the baseline build.
__attribute__((target_clones("avx512f", "avx2", "default"))) void exp_run(const float* x, float* y,
                                                                           int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) y[i] = std::exp(x[i]);
}

}  // namespace halogen::kernels::cpu::detail
