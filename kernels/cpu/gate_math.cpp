// Compiled with -ffast-math -fopenmp-simd (kernels/CMakeLists.txt): only these two loops, so that no other
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

}  // namespace halogen::kernels::cpu::detail
