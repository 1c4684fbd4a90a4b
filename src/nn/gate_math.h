#pragma once
// Vectorised gate non-linearities for the recurrent cells (host): y[i] = sigma(x[i]) or tanh(x[i]) over a
// contiguous run. Compiled with -ffast-math (gate_math.cpp only) so that the loops call glibc's vector exp/tanh;
// results agree with std::exp/std::tanh to a few ulp. In-place (y == x) is allowed.
#include <cstdint>

namespace halogen::nn {

void sigmoid_run(const float* x, float* y, int64_t count);
void tanh_run(const float* x, float* y, int64_t count);

}  // namespace halogen::nn
