#pragma once
// Adam over a ParameterStore (PyTorch semantics, kernels::adam_step): weight decay is L2 added to the
// gradient, per layer, so Kipf & Welling's "5e-4 on the first layer only" is weight_decay_per_layer = {5e-4,
// 0, ...}. State: first and second moments (flat, like the parameters) and the step count.
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"
#include "nn/parameters.h"

namespace halogen::nn {

struct AdamConfig {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // > 0: before each update, gradients whose global L2 norm exceeds this are scaled to it (torch's
  // clip_grad_norm_: factor max_norm / (norm + 1e-6), before weight decay). 0: off.
  float clip_grad_norm = 0.0f;
  std::vector<float> weight_decay_per_layer;  // missing layers: 0
};

class Adam {
 public:
  Adam(ParameterStore& store, AdamConfig config);
  // One update with the gradients in the store; increments the step count first (t starts at 1).
  void step(kernels::Stream stream = nullptr);
  // The gradient norm of the last step (clip_grad_norm > 0 only; else -1) and how many steps were clipped.
  double last_grad_norm() const { return last_grad_norm_; }
  int64_t clipped_steps() const { return clipped_steps_; }

  int64_t steps_done() const { return steps_done_; }
  void set_steps_done(int64_t steps) { steps_done_ = steps; }
  Tensor& first_moment() { return m_; }
  Tensor& second_moment() { return v_; }

 private:
  ParameterStore& store_;
  AdamConfig config_;
  Tensor m_, v_;
  int64_t steps_done_ = 0;
  double last_grad_norm_ = -1;
  int64_t clipped_steps_ = 0;
};

}  // namespace halogen::nn
