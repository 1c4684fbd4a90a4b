// GPU parity of the temporal-cell ops (kernels/cuda/recurrent.cu, link.cu) against halogen::kernels::cpu:
// activations and their backward, multiply, scale_add, the fused GRU gates (both mixes), the fused LSTM cell,
// pair scores, their backward and the binary cross-entropy with logits. Views are strided; whole arrays
// (padding included) are compared, so a kernel writing into the padding fails.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

constexpr int64_t kRows = 301, kCols = 45, kStride = 48;

HostMatrix uniform_matrix(uint64_t seed, float lo, float hi, int64_t rows = kRows, int64_t cols = kCols,
                          int64_t stride = kStride) {
  return HostMatrix{rows, cols, stride, uniform_values(rows * stride, seed, lo, hi)};
}

Matrix<const float> cview(HostMatrix& m) { return m.view(); }
Matrix<const float> cview(DeviceMatrix& m) { return m.view(); }

// Largest |a - b| over two arrays of the same size.
double max_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
  return worst;
}

// expf/tanhf on the GPU and glibc's vector exp/tanh on the CPU are each within a few ulp of the exact value:
// results in [-1, 1] (and products of a few of them) agree to 1e-6.
constexpr double kTranscendental = 1e-6;

}  // namespace

TEST(GpuRecurrent, ActivationsMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  HostMatrix x = uniform_matrix(1, -8.0f, 8.0f), grad = uniform_matrix(2, -1.0f, 1.0f);
  DeviceMatrix x_d(x), grad_d(grad);
  for (int op = 0; op < 3; ++op) {
    HostMatrix y = uniform_matrix(3, 0.0f, 1.0f), g = uniform_matrix(4, 0.0f, 1.0f);
    DeviceMatrix y_d(y), g_d(g);
    if (op == 0) {
      kernels::cpu::sigmoid_forward(cview(x), y.view());
      kernels::cuda::sigmoid_forward(cview(x_d), y_d.view());
      kernels::cpu::sigmoid_backward(cview(y), cview(grad), g.view());
      kernels::cuda::sigmoid_backward(cview(y_d), cview(grad_d), g_d.view());
    } else if (op == 1) {
      kernels::cpu::tanh_forward(cview(x), y.view());
      kernels::cuda::tanh_forward(cview(x_d), y_d.view());
      kernels::cpu::tanh_backward(cview(y), cview(grad), g.view());
      kernels::cuda::tanh_backward(cview(y_d), cview(grad_d), g_d.view());
    } else {
      kernels::cpu::relu_forward(cview(x), y.view());
      kernels::cuda::relu_forward(cview(x_d), y_d.view());
      g = grad;
      g_d = DeviceMatrix(grad);
      kernels::cpu::relu_backward(cview(y), g.view());
      kernels::cuda::relu_backward(cview(y_d), g_d.view());
    }
    const double tolerance = op == 2 ? 0.0 : kTranscendental;  // relu: exact
    EXPECT_LE(max_difference(y_d.host(), y.data), tolerance) << "forward op " << op;
    EXPECT_LE(max_difference(g_d.host(), g.data), tolerance) << "backward op " << op;
  }
}

TEST(GpuRecurrent, MultiplyAndScaleAddMatchCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  // multiply is one rounding per element. scale_add with alpha, beta powers of two has exact products, so its
  // one rounding (the sum) is the same even where nvcc contracts alpha * x + beta * y into an FMA: bit for bit.
  HostMatrix a = uniform_matrix(5, -2.0f, 2.0f), b = uniform_matrix(6, -2.0f, 2.0f), out = uniform_matrix(7, 0, 1);
  DeviceMatrix a_d(a), b_d(b), out_d(out);
  kernels::cpu::multiply(cview(a), cview(b), out.view());
  kernels::cuda::multiply(cview(a_d), cview(b_d), out_d.view());
  EXPECT_EQ(out_d.host(), out.data);
  for (float beta : {0.0f, 1.0f, -2.0f}) {
    HostMatrix y = uniform_matrix(8, -1.0f, 1.0f);
    DeviceMatrix y_d(y);
    kernels::cpu::scale_add(0.5f, cview(a), beta, y.view());
    kernels::cuda::scale_add(0.5f, cview(a_d), beta, y_d.view());
    EXPECT_EQ(y_d.host(), y.data) << "beta " << beta;
  }
}

TEST(GpuRecurrent, GruGatesForwardAndBackwardMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  for (kernels::GruMix mix : {kernels::GruMix::z_keeps_state, kernels::GruMix::z_takes_candidate}) {
    HostMatrix pre_z = uniform_matrix(10, -4, 4), pre_r = uniform_matrix(11, -4, 4), pre_h = uniform_matrix(12, -4, 4),
               h_prev = uniform_matrix(13, -1, 1), grad_h = uniform_matrix(14, -1, 1),
               carry = uniform_matrix(15, -1, 1), grad_hr = uniform_matrix(16, -1, 1);
    HostMatrix z = uniform_matrix(17, 0, 1), r = z, hr = z, cand = z, h = z, dz = z, dr = z, dh = z;
    DeviceMatrix pre_z_d(pre_z), pre_r_d(pre_r), pre_h_d(pre_h), h_prev_d(h_prev), grad_h_d(grad_h),
        carry_d(carry), grad_hr_d(grad_hr), z_d(z), r_d(r), hr_d(hr), cand_d(cand), h_d(h), dz_d(dz), dr_d(dr),
        dh_d(dh);
    kernels::cpu::gru_gates(cview(pre_z), cview(pre_r), cview(h_prev), z.view(), r.view(), hr.view());
    kernels::cuda::gru_gates(cview(pre_z_d), cview(pre_r_d), cview(h_prev_d), z_d.view(), r_d.view(), hr_d.view());
    kernels::cpu::gru_update(cview(pre_h), cview(z), cview(h_prev), mix, cand.view(), h.view());
    kernels::cuda::gru_update(cview(pre_h_d), cview(z_d), cview(h_prev_d), mix, cand_d.view(), h_d.view());
    EXPECT_LE(max_difference(z_d.host(), z.data), kTranscendental);
    EXPECT_LE(max_difference(r_d.host(), r.data), kTranscendental);
    EXPECT_LE(max_difference(hr_d.host(), hr.data), kTranscendental);
    EXPECT_LE(max_difference(cand_d.host(), cand.data), kTranscendental);
    EXPECT_LE(max_difference(h_d.host(), h.data), 2 * kTranscendental);  // a mix of two such values
    // Backward from the CPU's gates on both sides (so only the backward arithmetic is compared), with the
    // carry aliased as the direct gradient of h_prev, as the cells do.
    DeviceMatrix z_same(z), r_same(r), cand_same(cand);
    kernels::cpu::gru_update_backward(cview(grad_h), cview(carry), cview(z), cview(h_prev), cview(cand), mix,
                                      dz.view(), dh.view(), carry.view());
    kernels::cuda::gru_update_backward(cview(grad_h_d), cview(carry_d), cview(z_same), cview(h_prev_d),
                                       cview(cand_same), mix, dz_d.view(), dh_d.view(), carry_d.view());
    kernels::cpu::gru_gates_backward(cview(grad_hr), cview(r), cview(h_prev), dr.view(), carry.view());
    kernels::cuda::gru_gates_backward(cview(grad_hr_d), cview(r_same), cview(h_prev_d), dr_d.view(), carry_d.view());
    // The same float expressions on the same inputs; only FMA contraction may differ: 1e-6 on O(1) values.
    EXPECT_LE(max_difference(dz_d.host(), dz.data), 1e-6);
    EXPECT_LE(max_difference(dh_d.host(), dh.data), 1e-6);
    EXPECT_LE(max_difference(dr_d.host(), dr.data), 1e-6);
    EXPECT_LE(max_difference(carry_d.host(), carry.data), 1e-6);
  }
}

TEST(GpuRecurrent, LstmCellForwardAndBackwardMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  const int64_t width = 45, stride = 48;
  HostMatrix pre = uniform_matrix(40, -4, 4, kRows, 4 * width, 4 * stride),
             c_prev = uniform_matrix(41, -1, 1, kRows, width, stride),
             grad_h = uniform_matrix(42, -1, 1, kRows, width, stride),
             grad_c = uniform_matrix(43, -1, 1, kRows, width, stride);
  HostMatrix gates = uniform_matrix(44, 0, 1, kRows, 4 * width, 4 * stride), grad_pre = gates,
             c = uniform_matrix(45, 0, 1, kRows, width, stride), h = c;
  DeviceMatrix pre_d(pre), c_prev_d(c_prev), grad_h_d(grad_h), grad_c_d(grad_c), gates_d(gates), grad_pre_d(grad_pre),
      c_d(c), h_d(h);
  kernels::cpu::lstm_cell(cview(pre), cview(c_prev), gates.view(), c.view(), h.view());
  kernels::cuda::lstm_cell(cview(pre_d), cview(c_prev_d), gates_d.view(), c_d.view(), h_d.view());
  EXPECT_LE(max_difference(gates_d.host(), gates.data), kTranscendental);
  EXPECT_LE(max_difference(c_d.host(), c.data), 2 * kTranscendental);  // a sum of two products of such values
  EXPECT_LE(max_difference(h_d.host(), h.data), 4 * kTranscendental);
  // Backward from the CPU's forward on both sides; the carry aliased as grad_c_prev.
  DeviceMatrix gates_same(gates), c_same(c);
  kernels::cpu::lstm_cell_backward(cview(grad_h), cview(grad_c), cview(gates), cview(c_prev), cview(c), grad_pre.view(),
                                   grad_c.view());
  kernels::cuda::lstm_cell_backward(cview(grad_h_d), cview(grad_c_d), cview(gates_same), cview(c_prev_d),
                                    cview(c_same), grad_pre_d.view(), grad_c_d.view());
  // tanh(c) recomputed on each side (a few ulp apart) enters every term: 2e-6 on O(1) values.
  EXPECT_LE(max_difference(grad_pre_d.host(), grad_pre.data), 2e-6);
  EXPECT_LE(max_difference(grad_c_d.host(), grad_c.data), 2e-6);
}

TEST(GpuRecurrent, PairScoresAndBackwardMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  const int64_t n = 500, f = 40, stride = 41, m = 20000;
  HostMatrix x = uniform_matrix(20, -1, 1, n, f, stride);
  std::vector<int32_t> a(m), b(m);
  std::vector<float> g = uniform_values(m, 21, -1.0f, 1.0f);
  for (int64_t k = 0; k < m; ++k) {
    a[k] = static_cast<int32_t>(rng::uniform_u64(22, 1, k) % n);
    b[k] = k % 13 == 0 ? a[k] : static_cast<int32_t>(rng::uniform_u64(23, 1, k) % n);  // some self pairs
  }
  DeviceMatrix x_d(x);
  Buffer<int32_t> a_d = to_device(a), b_d = to_device(b);
  Buffer<float> g_d = to_device(g), scores_d(m, Device::cuda);
  std::vector<float> scores(m);
  kernels::cpu::pair_dot(cview(x), Span<const int32_t>{a.data(), m, Device::cpu},
                         Span<const int32_t>{b.data(), m, Device::cpu}, Span<float>{scores.data(), m, Device::cpu});
  kernels::cuda::pair_dot(cview(x_d), Span<const int32_t>{a_d.data(), m, Device::cuda},
                          Span<const int32_t>{b_d.data(), m, Device::cuda}, scores_d.span());
  // Both sum in double and round once; the order of the double additions differs (~1e-16): equal floats
  // except at a rounding boundary, hence one float ulp of values below 40 (4e-6).
  EXPECT_LE(max_difference(to_host(scores_d), scores), 4e-6);
  HostMatrix grad = uniform_matrix(24, -1, 1, n, f, stride);
  DeviceMatrix grad_d(grad);
  kernels::cpu::pair_dot_backward(cview(x), Span<const int32_t>{a.data(), m, Device::cpu},
                                  Span<const int32_t>{b.data(), m, Device::cpu},
                                  Span<const float>{g.data(), m, Device::cpu}, grad.view());
  kernels::cuda::pair_dot_backward(cview(x_d), Span<const int32_t>{a_d.data(), m, Device::cuda},
                                   Span<const int32_t>{b_d.data(), m, Device::cuda},
                                   Span<const float>{g_d.data(), m, Device::cuda}, grad_d.view());
  // Both add each row's terms in pair order with a rounded multiply and add (the GPU kernel is row-owned, no
  // atomics): equal bit for bit, padding included.
  EXPECT_EQ(grad_d.host(), grad.data);
}

TEST(GpuRecurrent, BceWithLogitsMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  const int64_t m = 10000;
  std::vector<float> scores = uniform_values(m, 30, -30.0f, 30.0f);
  std::vector<uint8_t> labels(m);
  for (int64_t k = 0; k < m; ++k) labels[k] = static_cast<uint8_t>(rng::uniform_u64(31, 1, k) % 2);
  std::vector<float> grad(m);
  Buffer<float> scores_d = to_device(scores), grad_d(m, Device::cuda);
  Buffer<uint8_t> labels_d = to_device(labels);
  const double cpu = kernels::cpu::bce_with_logits(Span<const float>{scores.data(), m, Device::cpu},
                                                   Span<const uint8_t>{labels.data(), m, Device::cpu}, 0.01f,
                                                   Span<float>{grad.data(), m, Device::cpu});
  const double gpu = kernels::cuda::bce_with_logits(Span<const float>{scores_d.data(), m, Device::cuda},
                                                    Span<const uint8_t>{labels_d.data(), m, Device::cuda}, 0.01f,
                                                    grad_d.span());
  // Per-element double arithmetic; only the order of the sum differs: 1e-12 relative.
  EXPECT_NEAR(gpu, cpu, 1e-12 * cpu);
  // float gradients from double values: equal up to the last bit of CUDA's vs glibc's double exp (1e-15).
  EXPECT_LE(max_difference(to_host(grad_d), grad), 1e-9);
}
