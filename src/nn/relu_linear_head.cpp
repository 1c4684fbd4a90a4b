#include "nn/relu_linear_head.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

ReluLinearHead::ReluLinearHead(ParameterStore& store, int layer, int64_t hidden, int64_t out)
    : store_(store), hidden_(hidden), out_(out) {
  weight_ = store.add("head.weight", layer, hidden, out, false);
  bias_ = store.add("head.bias", layer, 1, out, true);
}

void ReluLinearHead::allocate(int64_t num_owned, int64_t slots) {
  num_owned_ = num_owned;
  slots_ = slots;
  activations_ = Tensor((slots + 1) * num_owned, hidden_, Device::cpu);
}

int64_t ReluLinearHead::scratch_bytes() const {
  return (slots_ + 1) * num_owned_ * hidden_ * static_cast<int64_t>(sizeof(float));
}

void ReluLinearHead::forward(Matrix<const float> h, Matrix<float> y, int64_t slot) {
  HALOGEN_ASSERT(slot >= -1 && slot < slots_);
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(h.rows == n && h.cols == hidden_ && y.rows == n && y.cols == out_);
  const int64_t index = slot < 0 ? slots_ : slot;
  Matrix<float> a = activations_.matrix().slice_rows(index * n, (index + 1) * n);
  const int64_t width = hidden_;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const float* __restrict__ in = h.row(r);
    float* __restrict__ out = a.row(r);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) out[c] = in[c] > 0.0f ? in[c] : 0.0f;
  }
  if (n == 0) return;
  kernels::gemm(a, false, store_.param(weight_), false, y, 1.0f, 0.0f, nullptr);
  Matrix<float> bias = store_.param(bias_);
  kernels::add_bias(y, Span<const float>{bias.data, out_, Device::cpu}, nullptr);
}

void ReluLinearHead::backward(int64_t slot, Matrix<const float> grad_y, Matrix<float> grad_h) {
  HALOGEN_ASSERT(slot >= 0 && slot < slots_);
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(grad_y.rows == n && grad_y.cols == out_ && grad_h.rows == n && grad_h.cols == hidden_);
  if (n == 0) return;
  Matrix<const float> a = activations_.matrix().slice_rows(slot * n, (slot + 1) * n);
  kernels::gemm(a, true, grad_y, false, store_.grad(weight_), 1.0f, 1.0f, nullptr);
  Matrix<float> grad_bias = store_.grad(bias_);
  kernels::bias_backward(grad_y, Span<float>{grad_bias.data, out_, Device::cpu}, nullptr);
  kernels::gemm(grad_y, false, store_.param(weight_), true, grad_h, 1.0f, 0.0f, nullptr);
  const int64_t width = hidden_;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const float* __restrict__ act = a.row(r);
    float* __restrict__ g = grad_h.row(r);
#pragma omp simd
    for (int64_t c = 0; c < width; ++c) g[c] = act[c] > 0.0f ? g[c] : 0.0f;  // branch-free: vectorises
  }
}

}  // namespace halogen::nn
