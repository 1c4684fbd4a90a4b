// EvolveGCN-O matrix GRU (nn/evolve_gcn.h): forward against an independent double-precision reference,
// backward through time against central finite differences of that reference, and the recurrence carrying
// its state (W_2 is the GRU applied to W_1, not to W_0).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "nn/evolve_gcn.h"

using halogen::Buffer;
using halogen::Matrix;
using halogen::nn::EvolveGcnWeights;

namespace {

constexpr int64_t kIn = 4, kOut = 3, kSteps = 3;
using Dense = std::vector<double>;  // row-major

// The nine GRU tensors and W_0 as doubles, in MatrixGruTensors::all() order, then W_0.
struct Reference {
  std::vector<Dense> gru;  // w_z u_z b_z w_r u_r b_r w_h u_h b_h
  Dense w0;
};

Dense random_dense(int64_t size, uint64_t stream, double scale) {
  Dense out(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i)
    out[i] = scale * halogen::rng::normal(11, stream, static_cast<uint64_t>(i));
  return out;
}

Reference random_reference() {
  Reference ref;
  for (int k = 0; k < 9; ++k) {
    const bool bias = k % 3 == 2;
    ref.gru.push_back(random_dense(bias ? kIn * kOut : kIn * kIn, 100 + k, 0.6));
  }
  ref.w0 = random_dense(kIn * kOut, 200, 1.0);
  return ref;
}

// out = a (kIn x kIn) x (kIn x kOut)
Dense left(const Dense& a, const Dense& x) {
  Dense out(kIn * kOut, 0.0);
  for (int64_t i = 0; i < kIn; ++i)
    for (int64_t k = 0; k < kIn; ++k)
      for (int64_t j = 0; j < kOut; ++j) out[i * kOut + j] += a[i * kIn + k] * x[k * kOut + j];
  return out;
}

// W_1..W_T by the definition in the issue, written out independently of the implementation.
std::vector<Dense> reference_forward(const Reference& ref, int64_t steps) {
  std::vector<Dense> w = {ref.w0};
  const auto& g = ref.gru;
  for (int64_t t = 0; t < steps; ++t) {
    const Dense& q = w.back();
    const Dense zw = left(g[0], q), zu = left(g[1], q), rw = left(g[3], q), ru = left(g[4], q);
    Dense z(kIn * kOut), r(kIn * kOut), rq(kIn * kOut), next(kIn * kOut);
    for (int64_t i = 0; i < kIn * kOut; ++i) {
      z[i] = 1 / (1 + std::exp(-(zw[i] + zu[i] + g[2][i])));
      r[i] = 1 / (1 + std::exp(-(rw[i] + ru[i] + g[5][i])));
      rq[i] = r[i] * q[i];
    }
    const Dense hw = left(g[6], q), hu = left(g[7], rq);
    for (int64_t i = 0; i < kIn * kOut; ++i) {
      const double h = std::tanh(hw[i] + hu[i] + g[8][i]);
      next[i] = (1 - z[i]) * q[i] + z[i] * h;
    }
    w.push_back(next);
  }
  return w;
}

// Loss = sum_t sum_ij coeff[t][ij] * W_t[ij]  (t = 1..T): every W_t gets a different direct gradient.
std::vector<Dense> loss_coefficients() {
  std::vector<Dense> c;
  for (int64_t t = 0; t < kSteps; ++t) c.push_back(random_dense(kIn * kOut, 300 + t, 1.0));
  return c;
}

double reference_loss(const Reference& ref, const std::vector<Dense>& coeff) {
  const std::vector<Dense> w = reference_forward(ref, kSteps);
  double loss = 0;
  for (int64_t t = 1; t <= kSteps; ++t)
    for (int64_t i = 0; i < kIn * kOut; ++i) loss += coeff[t - 1][i] * w[t][i];
  return loss;
}

void load(EvolveGcnWeights& evolve, const Reference& ref, Buffer<float>& w0) {
  const std::vector<Buffer<float>*> tensors = evolve.gru().all();
  for (int k = 0; k < 9; ++k)
    for (int64_t i = 0; i < tensors[k]->size(); ++i) (*tensors[k])[i] = static_cast<float>(ref.gru[k][i]);
  w0 = Buffer<float>(kIn, kOut, halogen::Device::cpu);
  for (int64_t i = 0; i < kIn * kOut; ++i) w0[i] = static_cast<float>(ref.w0[i]);
}

}  // namespace

TEST(EvolveGcnO, ForwardMatchesDoubleReference) {
  const Reference ref = random_reference();
  EvolveGcnWeights evolve(kIn, kOut);
  Buffer<float> w0;
  load(evolve, ref, w0);
  evolve.forward(w0.matrix(), kSteps);
  const std::vector<Dense> expected = reference_forward(ref, kSteps);
  ASSERT_EQ(evolve.steps(), kSteps);
  for (int64_t t = 0; t <= kSteps; ++t)
    for (int64_t i = 0; i < kIn; ++i)
      for (int64_t j = 0; j < kOut; ++j)
        // float32 evaluation of O(1) values through 3 GRU steps: a few ulps per op, far below 1e-5.
        EXPECT_NEAR(evolve.weight(t)(i, j), expected[t][i * kOut + j], 1e-5) << t << " " << i << " " << j;
  // The weights really evolve: W_3 is not W_0.
  EXPECT_GT(std::fabs(expected[3][0] - expected[0][0]) + std::fabs(expected[3][5] - expected[0][5]), 1e-2);
}

TEST(EvolveGcnO, StateIsCarriedAcrossSteps) {
  const Reference ref = random_reference();
  EvolveGcnWeights two(kIn, kOut), one(kIn, kOut);
  Buffer<float> w0, unused;
  load(two, ref, w0);
  load(one, ref, unused);
  two.forward(w0.matrix(), 2);
  Buffer<float> w1(kIn, kOut, halogen::Device::cpu);
  for (int64_t i = 0; i < kIn * kOut; ++i) w1[i] = two.weight(1).data[i];
  one.forward(w1.matrix(), 1);  // one step from W_1 must give W_2
  for (int64_t i = 0; i < kIn * kOut; ++i) EXPECT_EQ(one.weight(1).data[i], two.weight(2).data[i]);
  // and one step from W_0 gives something else (a recurrence that restarted from W_0 would fail here).
  one.forward(w0.matrix(), 1);
  double difference = 0;
  for (int64_t i = 0; i < kIn * kOut; ++i)
    difference += std::fabs(one.weight(1).data[i] - two.weight(2).data[i]);
  EXPECT_GT(difference, 1e-2);
}

TEST(EvolveGcnO, BackwardThroughTimeMatchesFiniteDifferences) {
  Reference ref = random_reference();
  const std::vector<Dense> coeff = loss_coefficients();
  EvolveGcnWeights evolve(kIn, kOut);
  Buffer<float> w0;
  load(evolve, ref, w0);
  evolve.forward(w0.matrix(), kSteps);
  std::vector<Buffer<float>> grad_buffers;
  std::vector<Matrix<const float>> grad_w;
  for (int64_t t = 0; t < kSteps; ++t) {
    grad_buffers.emplace_back(kIn, kOut, halogen::Device::cpu);
    for (int64_t i = 0; i < kIn * kOut; ++i) grad_buffers.back()[i] = static_cast<float>(coeff[t][i]);
  }
  for (const auto& b : grad_buffers) grad_w.push_back(b.matrix());
  evolve.gru_grad().zero();
  Buffer<float> grad_w0(kIn, kOut, halogen::Device::cpu);
  evolve.backward(grad_w, grad_w0.matrix());

  // Central differences of the double reference: truncation ~eps^2 = 1e-12, rounding ~1e-16 / eps = 1e-10,
  // so they are exact to ~1e-9; the analytic float gradient differs by float rounding of O(1) sums (~1e-6
  // relative), hence 1e-4 absolute + 1e-4 relative.
  const double eps = 1e-6;
  auto check = [&](Dense& value, const float* analytic, const char* name) {
    for (size_t i = 0; i < value.size(); ++i) {
      const double saved = value[i];  // `value` is a tensor of `ref`
      value[i] = saved + eps;
      const double up = reference_loss(ref, coeff);
      value[i] = saved - eps;
      const double down = reference_loss(ref, coeff);
      value[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, 1e-4 + 1e-4 * std::fabs(numeric)) << name << "[" << i << "]";
    }
  };
  const char* names[] = {"w_z", "u_z", "b_z", "w_r", "u_r", "b_r", "w_h", "u_h", "b_h"};
  const std::vector<Buffer<float>*> grads = evolve.gru_grad().all();
  for (int k = 0; k < 9; ++k) check(ref.gru[k], grads[k]->data(), names[k]);
  check(ref.w0, grad_w0.data(), "w0");
}
