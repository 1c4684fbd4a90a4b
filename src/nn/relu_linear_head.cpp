#include "nn/relu_linear_head.h"

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

ReluLinearHead::ReluLinearHead(ParameterStore& store, int layer, int64_t hidden, int64_t out)
    : store_(store), hidden_(hidden), out_(out) {
  weight_ = store.add("head.weight", layer, hidden, out, false);
  bias_ = store.add("head.bias", layer, 1, out, true);
}

void ReluLinearHead::allocate(int64_t num_owned, int64_t slots, Device device, kernels::Stream stream) {
  num_owned_ = num_owned;
  slots_ = slots;
  stream_ = stream;
  activations_ = Tensor((slots + 1) * num_owned, hidden_, device);
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
  if (n == 0) return;
  kernels::relu_forward(h, a, stream_);
  kernels::gemm(a, false, store_.param(weight_), false, y, 1.0f, 0.0f, stream_);
  Matrix<float> bias = store_.param(bias_);
  kernels::add_bias(y, Span<const float>{bias.data, out_, bias.device}, stream_);
}

void ReluLinearHead::backward(int64_t slot, Matrix<const float> grad_y, Matrix<float> grad_h) {
  HALOGEN_ASSERT(slot >= 0 && slot < slots_);
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(grad_y.rows == n && grad_y.cols == out_ && grad_h.rows == n && grad_h.cols == hidden_);
  if (n == 0) return;
  Matrix<const float> a = activations_.matrix().slice_rows(slot * n, (slot + 1) * n);
  kernels::gemm(a, true, grad_y, false, store_.grad(weight_), 1.0f, 1.0f, stream_);
  Matrix<float> grad_bias = store_.grad(bias_);
  kernels::bias_backward(grad_y, Span<float>{grad_bias.data, out_, grad_bias.device}, stream_);
  kernels::gemm(grad_y, false, store_.param(weight_), true, grad_h, 1.0f, 0.0f, stream_);
  kernels::relu_backward(a, grad_h, stream_);
}

}  // namespace halogen::nn
