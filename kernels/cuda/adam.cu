// Adam with PyTorch semantics on the GPU. The host computes the step constants exactly as
// kernels/cpu/optimizer.cpp does, and the kernel uses round-to-nearest intrinsics (__fmul_rn, ...) so that
// nvcc does not contract a*b+c into an FMA: each element follows the CPU's float operations one by one.
#include <cmath>

#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void adam_kernel(float* param, const float* grad, float* m, float* v, int64_t n,  // all (n)
                            float beta1, float beta2, float one_minus_beta1, float one_minus_beta2, float eps,
                            float weight_decay, float grad_scale, float step_size, float bias_correction2_sqrt) {
  for (int64_t i = grid_first(); i < n; i += grid_step()) {
    const float p = param[i];
    const float scaled = __fmul_rn(grad[i], grad_scale);  // exact when grad_scale is 1
    const float g = weight_decay != 0.0f ? __fadd_rn(scaled, __fmul_rn(weight_decay, p)) : scaled;
    const float m_new = __fadd_rn(__fmul_rn(m[i], beta1), __fmul_rn(one_minus_beta1, g));
    const float v_new = __fadd_rn(__fmul_rn(v[i], beta2), __fmul_rn(one_minus_beta2, __fmul_rn(g, g)));
    const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v_new), bias_correction2_sqrt), eps);
    m[i] = m_new;
    v[i] = v_new;
    param[i] = __fsub_rn(p, __fmul_rn(step_size, __fdiv_rn(m_new, denom)));
  }
}

}  // namespace

void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v, const AdamParams& params,
               Stream stream) {
  detail::require_device(param, "adam param");
  detail::require_device(grad, "adam grad");
  detail::require_device(m, "adam m");
  detail::require_device(v, "adam v");
  HALOGEN_ASSERT(grad.size == param.size && m.size == param.size && v.size == param.size,
                 "param %lld, grad %lld, m %lld, v %lld entries", (long long)param.size, (long long)grad.size,
                 (long long)m.size, (long long)v.size);
  HALOGEN_ASSERT(params.step >= 1, "Adam step %lld; steps start at 1", (long long)params.step);
  if (param.size == 0) return;
  const double t = static_cast<double>(params.step);
  const double bias_correction1 = 1.0 - std::pow(static_cast<double>(params.beta1), t);
  const double bias_correction2 = 1.0 - std::pow(static_cast<double>(params.beta2), t);
  const float step_size = static_cast<float>(static_cast<double>(params.lr) / bias_correction1);
  const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  adam_kernel<<<grid_for(param.size, kThreads), kThreads, 0, to_cuda(stream)>>>(
      param.data, grad.data, m.data, v.data, param.size, params.beta1, params.beta2, 1.0f - params.beta1,
      1.0f - params.beta2, params.eps, params.weight_decay, params.grad_scale, step_size, bias_correction2_sqrt);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

}  // namespace halogen::kernels::cuda
