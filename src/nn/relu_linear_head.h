#pragma once
// The output head of every temporal model: y = relu(h) W_head + b_head, with its backward. Registers
// "head.weight" (hidden, out) and "head.bias" (1, out) in the model's store (layer index `layer`). Keeps
// relu(h) of each recorded window slot for backward; slot -1 = not recorded (evaluation). Every op runs through
// kernels/ on the store's device (relu_forward/relu_backward, gemm, add_bias/bias_backward) on `stream`.
#include <cstdint>

#include "core/buffer.h"
#include "kernels/ops.h"
#include "nn/parameters.h"

namespace halogen::nn {

class ReluLinearHead {
 public:
  ReluLinearHead(ParameterStore& store, int layer, int64_t hidden, int64_t out);
  // After store.allocate(device): caches for `slots` recorded steps of `num_owned` rows, on `device`.
  void allocate(int64_t num_owned, int64_t slots, Device device = Device::cpu, kernels::Stream stream = nullptr);
  void forward(Matrix<const float> h, Matrix<float> y, int64_t slot);
  // grad_h (n, hidden) "=" dLoss/dh through relu; head gradients "+=".
  void backward(int64_t slot, Matrix<const float> grad_y, Matrix<float> grad_h);
  int64_t scratch_bytes() const;

 private:
  ParameterStore& store_;
  int64_t hidden_, out_, num_owned_ = 0, slots_ = 0;
  int weight_ = -1, bias_ = -1;
  kernels::Stream stream_ = nullptr;
  Tensor activations_;  // (slots + 1) x (n, hidden): relu(h) per slot; the last one for unrecorded calls
};

}  // namespace halogen::nn
