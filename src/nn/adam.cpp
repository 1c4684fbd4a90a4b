#include "nn/adam.h"

#include <cmath>

#include "kernels/ops.h"

namespace halogen::nn {

Adam::Adam(ParameterStore& store, AdamConfig config)
    : store_(store), config_(std::move(config)), m_(store.total_size(), store.params().device()),
      v_(store.total_size(), store.params().device()) {
  m_.zero();
  v_.zero();
}

void Adam::step(kernels::Stream stream) {
  ++steps_done_;
  const Device device = store_.params().device();
  // Gradient clipping by the global norm (the gradients are the same on every rank after the allreduce, so
  // every rank takes the same decision). A non-finite norm is left alone: the trainer's check reports it.
  float grad_scale = 1.0f;
  if (config_.clip_grad_norm > 0.0f) {
    last_grad_norm_ = std::sqrt(kernels::sum_squares(Span<const float>{store_.grads().data(), store_.grads().size(), device}, stream));
    if (std::isfinite(last_grad_norm_) && last_grad_norm_ > config_.clip_grad_norm) {
      grad_scale = static_cast<float>(config_.clip_grad_norm / (last_grad_norm_ + 1e-6));
      ++clipped_steps_;
    }
  }
  for (int k = 0; k < store_.count(); ++k) {
    const ParameterInfo& p = store_.info(k);
    kernels::AdamParams params;
    params.lr = config_.lr;
    params.beta1 = config_.beta1;
    params.beta2 = config_.beta2;
    params.eps = config_.eps;
    params.step = steps_done_;
    params.grad_scale = grad_scale;
    params.weight_decay = p.layer < static_cast<int>(config_.weight_decay_per_layer.size())
                              ? config_.weight_decay_per_layer[p.layer] : 0.0f;
    kernels::adam_step(Span<float>{store_.params().data() + p.offset, p.size(), device},
                       Span<const float>{store_.grads().data() + p.offset, p.size(), device},
                       Span<float>{m_.data() + p.offset, p.size(), device},
                       Span<float>{v_.data() + p.offset, p.size(), device}, params, stream);
  }
}

}  // namespace halogen::nn
