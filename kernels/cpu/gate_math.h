#pragma once
// Vectorised non-linearities over a contiguous run (host), internal to kernels/cpu:
// y[i] = sigmoid(x[i]), tanh(x[i]) or exp(x[i]) for i < count. Compiled with -ffast-math (gate_math.cpp only) so that the
// loops call glibc's vector exp/tanh (libmvec); results agree with std::exp/std::tanh to a few ulp. In place
// (y == x) is allowed.
#include <cstdint>

namespace halogen::kernels::cpu::detail {

void sigmoid_run(const float* x, float* y, int64_t count);
void tanh_run(const float* x, float* y, int64_t count);
// y[i] = exp(x[i]) (GAT's softmax terms; x[i] may be -inf, giving 0).
void exp_run(const float* x, float* y, int64_t count);

}  // namespace halogen::kernels::cpu::detail
