#include "nn/gate_math.h"

#include <cmath>

namespace halogen::nn {

void sigmoid_run(const float* x, float* y, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) y[i] = 1.0f / (1.0f + std::exp(-x[i]));
}

void tanh_run(const float* x, float* y, int64_t count) {
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
}

}  // namespace halogen::nn
