// Adam with PyTorch semantics (torch.optim.Adam, single-tensor path), in PyTorch's order of float operations.
#include <omp.h>

#include <cmath>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v,
               const AdamParams& params, Stream) {
  detail::require_host(param, "adam param");
  detail::require_host(grad, "adam grad");
  detail::require_host(m, "adam m");
  detail::require_host(v, "adam v");
  HALOGEN_ASSERT(grad.size == param.size && m.size == param.size && v.size == param.size,
                 "param %lld, grad %lld, m %lld, v %lld entries", (long long)param.size, (long long)grad.size,
                 (long long)m.size, (long long)v.size);
  HALOGEN_ASSERT(params.step >= 1, "Adam step %lld; steps start at 1", (long long)params.step);
  // Bias corrections in double, as Python computes them in torch.optim.Adam.
  const double t = static_cast<double>(params.step);
  const double bias_correction1 = 1.0 - std::pow(static_cast<double>(params.beta1), t);
  const double bias_correction2 = 1.0 - std::pow(static_cast<double>(params.beta2), t);
  const float step_size = static_cast<float>(static_cast<double>(params.lr) / bias_correction1);
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const float beta1 = params.beta1, beta2 = params.beta2, eps = params.eps,
              weight_decay = params.weight_decay, grad_scale = params.grad_scale;
  const float one_minus_beta1 = 1.0f - beta1, one_minus_beta2 = 1.0f - beta2;
  float* __restrict__ p = param.data;
  const float* __restrict__ g_in = grad.data;
  float* __restrict__ m_data = m.data;
  float* __restrict__ v_data = v.data;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < param.size; ++i) {
    const float scaled = g_in[i] * grad_scale;  // exact when grad_scale is 1
    const float g = weight_decay != 0.0f ? scaled + weight_decay * p[i] : scaled;
    m_data[i] = m_data[i] * beta1 + one_minus_beta1 * g;
    v_data[i] = v_data[i] * beta2 + one_minus_beta2 * (g * g);
    const float denom = std::sqrt(v_data[i]) / bias_correction2_sqrt + eps;
    p[i] -= step_size * (m_data[i] / denom);
  }
}

}  // namespace halogen::kernels::cpu
