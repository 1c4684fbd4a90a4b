// CPU ops of the temporal cells (kernels/cpu/recurrent.cpp, link.cpp) against naive double-precision references,
// and every backward against central finite differences of a double forward. Views are strided (padding
// sentinels catch a kernel touching the gap between rows).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using halogen::kernels::test::HostMatrix;

namespace {

constexpr int64_t kRows = 37, kCols = 19, kPad = 3;

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

HostMatrix random_matrix(std::mt19937_64& gen, float lo = -3.0f, float hi = 3.0f, int64_t rows = kRows,
                         int64_t cols = kCols) {
  HostMatrix m(rows, cols, kPad);
  m.randomize(gen, lo, hi);
  return m;
}

// Central difference of f at m(r, c) (double arithmetic on a float input: eps 1e-3 keeps the float perturbation
// exact enough; truncation error ~eps^2 * f''' ~ 1e-6 for O(1) derivatives).
double central_difference(HostMatrix& m, int64_t r, int64_t c, const std::function<double()>& f) {
  const float saved = m(r, c);
  const double eps = 1e-3;
  m(r, c) = saved + static_cast<float>(eps);
  const double plus = f();
  m(r, c) = saved - static_cast<float>(eps);
  const double minus = f();
  m(r, c) = saved;
  const double step = (static_cast<double>(saved + static_cast<float>(eps)) -
                       static_cast<double>(saved - static_cast<float>(eps)));
  return (plus - minus) / step;
}

}  // namespace

TEST(CpuActivations, ForwardMatchesDoubleReferenceAndKeepsPadding) {
  std::mt19937_64 gen(1);
  HostMatrix x = random_matrix(gen, -20.0f, 20.0f);
  HostMatrix s(kRows, kCols, kPad), t(kRows, kCols, kPad), r(kRows, kCols, kPad);
  kernels::cpu::sigmoid_forward(x.cview(), s.view());
  kernels::cpu::tanh_forward(x.cview(), t.view());
  kernels::cpu::relu_forward(x.cview(), r.view());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) {
      // Vector exp/tanh (libmvec) are within a few ulp of the exact value: 1e-6 absolute on values in [-1, 1].
      EXPECT_NEAR(s(i, j), sigmoid_ref(x(i, j)), 1e-6) << i << " " << j;
      EXPECT_NEAR(t(i, j), std::tanh(static_cast<double>(x(i, j))), 1e-6) << i << " " << j;
      EXPECT_EQ(r(i, j), x(i, j) > 0.0f ? x(i, j) : 0.0f);
    }
  EXPECT_TRUE(s.padding_intact() && t.padding_intact() && r.padding_intact());
  // In place gives the same values.
  HostMatrix in_place = x;
  kernels::cpu::sigmoid_forward(in_place.cview(), in_place.view());
  EXPECT_EQ(in_place.data, s.data);
}

TEST(CpuActivations, BackwardsMatchFiniteDifferences) {
  std::mt19937_64 gen(2);
  HostMatrix x = random_matrix(gen), grad_y = random_matrix(gen, -1.0f, 1.0f);
  HostMatrix s(kRows, kCols, kPad), t(kRows, kCols, kPad), gs(kRows, kCols, kPad), gt(kRows, kCols, kPad);
  kernels::cpu::sigmoid_forward(x.cview(), s.view());
  kernels::cpu::tanh_forward(x.cview(), t.view());
  kernels::cpu::sigmoid_backward(s.cview(), grad_y.cview(), gs.view());
  kernels::cpu::tanh_backward(t.cview(), grad_y.cview(), gt.view());
  for (int64_t i = 0; i < kRows; i += 3)
    for (int64_t j = 0; j < kCols; ++j) {
      auto loss_s = [&] { return grad_y(i, j) * sigmoid_ref(x(i, j)); };
      auto loss_t = [&] { return grad_y(i, j) * std::tanh(static_cast<double>(x(i, j))); };
      // float outputs y (rounded) enter the analytic gradient: ~1e-7 relative; truncation ~1e-6: 1e-5.
      EXPECT_NEAR(gs(i, j), central_difference(x, i, j, loss_s), 1e-5);
      EXPECT_NEAR(gt(i, j), central_difference(x, i, j, loss_t), 1e-5);
    }
  // relu_backward zeroes exactly where the output is not positive, keeps the rest bit for bit.
  HostMatrix r(kRows, kCols, kPad), g = grad_y;
  kernels::cpu::relu_forward(x.cview(), r.view());
  kernels::cpu::relu_backward(r.cview(), g.view());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) EXPECT_EQ(g(i, j), x(i, j) > 0.0f ? grad_y(i, j) : 0.0f);
  EXPECT_TRUE(g.padding_intact() && gs.padding_intact() && gt.padding_intact());
}

TEST(CpuElementwise, MultiplyAndScaleAdd) {
  std::mt19937_64 gen(3);
  HostMatrix a = random_matrix(gen), b = random_matrix(gen), out(kRows, kCols, kPad);
  kernels::cpu::multiply(a.cview(), b.cview(), out.view());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) EXPECT_EQ(out(i, j), a(i, j) * b(i, j));  // one rounding: exact
  HostMatrix y = b;
  kernels::cpu::scale_add(0.5f, a.cview(), -2.0f, y.view());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j)
      // two roundings of O(10) values: 2e-6 absolute.
      EXPECT_NEAR(y(i, j), 0.5 * a(i, j) - 2.0 * b(i, j), 2e-6);
  // beta = 0 never reads y: NaN there does not leak.
  HostMatrix copy(kRows, kCols, kPad);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) copy(i, j) = std::nanf("");
  kernels::cpu::scale_add(1.0f, a.cview(), 0.0f, copy.view());
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) EXPECT_EQ(copy(i, j), a(i, j));
  EXPECT_TRUE(out.padding_intact() && y.padding_intact() && copy.padding_intact());
}

// The GRU ops against a double reference, and their backward against finite differences of
//   L = sum(d o h) + sum(g_hr o hr),  d = grad_h + grad_carry,
// as a function of pre_z, pre_r, pre_h and h_prev (pre_h taken as an independent input).
class CpuGru : public ::testing::TestWithParam<kernels::GruMix> {};

TEST_P(CpuGru, ForwardMatchesReferenceAndBackwardMatchesFiniteDifferences) {
  const kernels::GruMix mix = GetParam();
  const bool keeps = mix == kernels::GruMix::z_keeps_state;
  std::mt19937_64 gen(keeps ? 4 : 5);
  HostMatrix pre_z = random_matrix(gen), pre_r = random_matrix(gen), pre_h = random_matrix(gen),
             h_prev = random_matrix(gen, -1.0f, 1.0f);
  HostMatrix grad_h = random_matrix(gen, -1.0f, 1.0f), grad_carry = random_matrix(gen, -1.0f, 1.0f),
             grad_hr = random_matrix(gen, -1.0f, 1.0f);
  HostMatrix z(kRows, kCols, kPad), r(kRows, kCols, kPad), hr(kRows, kCols, kPad), cand(kRows, kCols, kPad),
      h(kRows, kCols, kPad);
  kernels::cpu::gru_gates(pre_z.cview(), pre_r.cview(), h_prev.cview(), z.view(), r.view(), hr.view());
  kernels::cpu::gru_update(pre_h.cview(), z.cview(), h_prev.cview(), mix, cand.view(), h.view());

  auto new_state = [&](int64_t i, int64_t j) {
    const double zz = sigmoid_ref(pre_z(i, j)), hh = std::tanh(static_cast<double>(pre_h(i, j)));
    return keeps ? zz * h_prev(i, j) + (1 - zz) * hh : (1 - zz) * h_prev(i, j) + zz * hh;
  };
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) {
      // a few float roundings of O(1) values after libmvec's exp/tanh: 2e-6.
      EXPECT_NEAR(z(i, j), sigmoid_ref(pre_z(i, j)), 2e-6);
      EXPECT_NEAR(r(i, j), sigmoid_ref(pre_r(i, j)), 2e-6);
      EXPECT_NEAR(hr(i, j), sigmoid_ref(pre_r(i, j)) * h_prev(i, j), 2e-6);
      EXPECT_NEAR(cand(i, j), std::tanh(static_cast<double>(pre_h(i, j))), 2e-6);
      EXPECT_NEAR(h(i, j), new_state(i, j), 2e-6);
    }
  EXPECT_TRUE(z.padding_intact() && r.padding_intact() && hr.padding_intact() && cand.padding_intact() &&
              h.padding_intact());

  HostMatrix grad_pre_z(kRows, kCols, kPad), grad_pre_h(kRows, kCols, kPad), grad_pre_r(kRows, kCols, kPad),
      grad_h_prev = grad_carry;  // aliasing grad_carry, as the cells do
  kernels::cpu::gru_update_backward(grad_h.cview(), grad_h_prev.cview(), z.cview(), h_prev.cview(), cand.cview(), mix,
                                    grad_pre_z.view(), grad_pre_h.view(), grad_h_prev.view());
  kernels::cpu::gru_gates_backward(grad_hr.cview(), r.cview(), h_prev.cview(), grad_pre_r.view(), grad_h_prev.view());
  // L restricted to element (i, j) (elements are independent).
  auto loss_at = [&](int64_t i, int64_t j) {
    return [&, i, j] {
      const double d = static_cast<double>(grad_h(i, j)) + grad_carry(i, j);
      return d * new_state(i, j) + grad_hr(i, j) * sigmoid_ref(pre_r(i, j)) * h_prev(i, j);
    };
  };
  for (int64_t i = 0; i < kRows; i += 2)
    for (int64_t j = 0; j < kCols; ++j) {
      // O(1) derivatives: float rounding of the analytic side ~1e-6, truncation ~1e-6: 2e-5.
      EXPECT_NEAR(grad_pre_z(i, j), central_difference(pre_z, i, j, loss_at(i, j)), 2e-5) << i << " " << j;
      EXPECT_NEAR(grad_pre_r(i, j), central_difference(pre_r, i, j, loss_at(i, j)), 2e-5) << i << " " << j;
      EXPECT_NEAR(grad_pre_h(i, j), central_difference(pre_h, i, j, loss_at(i, j)), 2e-5) << i << " " << j;
      EXPECT_NEAR(grad_h_prev(i, j), central_difference(h_prev, i, j, loss_at(i, j)), 2e-5) << i << " " << j;
    }
  // Without a carry, grad_h alone: the same as a zero carry.
  HostMatrix zero(kRows, kCols, kPad), dz_a(kRows, kCols, kPad), dh_a(kRows, kCols, kPad), g_a(kRows, kCols, kPad),
      dz_b(kRows, kCols, kPad), dh_b(kRows, kCols, kPad), g_b(kRows, kCols, kPad);
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) zero(i, j) = 0.0f;
  kernels::cpu::gru_update_backward(grad_h.cview(), Matrix<const float>{}, z.cview(), h_prev.cview(), cand.cview(), mix,
                                    dz_a.view(), dh_a.view(), g_a.view());
  kernels::cpu::gru_update_backward(grad_h.cview(), zero.cview(), z.cview(), h_prev.cview(), cand.cview(), mix,
                                    dz_b.view(), dh_b.view(), g_b.view());
  EXPECT_EQ(dz_a.data, dz_b.data);
  EXPECT_EQ(dh_a.data, dh_b.data);
  EXPECT_EQ(g_a.data, g_b.data);
}

INSTANTIATE_TEST_SUITE_P(BothMixes, CpuGru,
                         ::testing::Values(kernels::GruMix::z_keeps_state, kernels::GruMix::z_takes_candidate));

namespace {

// Pairs over n rows: random ones, a self pair (u == v) and repeats, so that a row collects several terms.
void random_pairs(std::mt19937_64& gen, int64_t n, int64_t m, std::vector<int32_t>& a, std::vector<int32_t>& b) {
  std::uniform_int_distribution<int32_t> row(0, static_cast<int32_t>(n - 1));
  a.clear();
  b.clear();
  for (int64_t k = 0; k < m; ++k) {
    a.push_back(row(gen));
    b.push_back(k % 17 == 0 ? a.back() : row(gen));
  }
  a.push_back(a[0]);  // an exact repeat
  b.push_back(b[0]);
}

Span<const int32_t> span_of(const std::vector<int32_t>& v) {
  return Span<const int32_t>{v.data(), static_cast<int64_t>(v.size()), Device::cpu};
}

}  // namespace

TEST(CpuLink, PairDotMatchesDoubleReference) {
  std::mt19937_64 gen(6);
  HostMatrix x = random_matrix(gen, -1.0f, 1.0f, 50, 24);
  std::vector<int32_t> a, b;
  random_pairs(gen, x.rows, 300, a, b);
  std::vector<float> scores(a.size(), -1.0f);
  kernels::cpu::pair_dot(x.cview(), span_of(a), span_of(b),
                         Span<float>{scores.data(), static_cast<int64_t>(scores.size()), Device::cpu});
  for (size_t k = 0; k < a.size(); ++k) {
    double expected = 0;
    for (int64_t c = 0; c < x.cols; ++c) expected += static_cast<double>(x(a[k], c)) * x(b[k], c);
    // summed in double, rounded once to float: half an ulp of a value below 24.
    EXPECT_NEAR(scores[k], expected, 1e-6 * std::max(1.0, std::fabs(expected))) << k;
  }
  // No pairs: nothing happens.
  kernels::cpu::pair_dot(x.cview(), Span<const int32_t>{}, Span<const int32_t>{}, Span<float>{});
}

TEST(CpuLink, PairDotBackwardMatchesFiniteDifferencesAndAnyThreadCount) {
  std::mt19937_64 gen(7);
  HostMatrix x = random_matrix(gen, -1.0f, 1.0f, 40, 8);
  std::vector<int32_t> a, b;
  random_pairs(gen, x.rows, 120, a, b);
  std::vector<float> g(a.size());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : g) v = dist(gen);
  const Span<const float> grad_scores{g.data(), static_cast<int64_t>(g.size()), Device::cpu};
  HostMatrix grad_x(x.rows, x.cols, kPad);
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < x.cols; ++j) grad_x(i, j) = 0.25f;  // "+=": the start value stays in
  kernels::cpu::pair_dot_backward(x.cview(), span_of(a), span_of(b), grad_scores, grad_x.view());
  // L = sum_k g_k <x_a, x_b>.
  auto loss = [&] {
    double sum = 0;
    for (size_t k = 0; k < a.size(); ++k)
      for (int64_t c = 0; c < x.cols; ++c) sum += g[k] * static_cast<double>(x(a[k], c)) * x(b[k], c);
    return sum;
  };
  for (int64_t i = 0; i < x.rows; ++i)
    for (int64_t j = 0; j < x.cols; j += 3)
      // L is quadratic (self pairs) or bilinear: the central difference is exact up to rounding of L (~1e-13 /
      // 1e-3); float sums of ~20 O(1) terms: 1e-5.
      EXPECT_NEAR(grad_x(i, j) - 0.25f, central_difference(x, i, j, loss), 1e-5) << i << " " << j;
  EXPECT_TRUE(grad_x.padding_intact());
  // Bitwise the same result with 1, 2 and 5 threads.
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 5}) {
    omp_set_num_threads(threads);
    HostMatrix out(x.rows, x.cols, kPad);
    for (int64_t i = 0; i < x.rows; ++i)
      for (int64_t j = 0; j < x.cols; ++j) out(i, j) = 0.0f;
    kernels::cpu::pair_dot_backward(x.cview(), span_of(a), span_of(b), grad_scores, out.view());
    results.push_back(out.data);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(CpuLink, BceWithLogitsMatchesReferenceAndItsDerivative) {
  std::vector<float> scores = {-40.0f, -3.5f, -0.25f, 0.0f, 0.7f, 2.0f, 35.0f, 1e-3f};
  std::vector<uint8_t> labels = {0, 1, 0, 1, 1, 0, 1, 0};
  const int64_t m = static_cast<int64_t>(scores.size());
  std::vector<float> grad(m, 99.0f);
  const float scale = 0.125f;
  const double loss = kernels::cpu::bce_with_logits(Span<const float>{scores.data(), m, Device::cpu},
                                                    Span<const uint8_t>{labels.data(), m, Device::cpu}, scale,
                                                    Span<float>{grad.data(), m, Device::cpu});
  auto bce = [](double s, double y) {  // -y log sigmoid(s) - (1 - y) log(1 - sigmoid(s)), naively in long double
    const long double p = 1.0L / (1.0L + std::exp(-static_cast<long double>(s)));
    return static_cast<double>(y > 0 ? -std::log(p) : -std::log1p(-p));
  };
  double expected = 0;
  for (int64_t k = 0; k < m; ++k) expected += bce(scores[k], labels[k]);
  // double evaluation of 8 terms (the largest ~40): 1e-12 relative.
  EXPECT_NEAR(loss, expected, 1e-12 * expected);
  for (int64_t k = 0; k < m; ++k) {
    const double s = scores[k], eps = 1e-6;
    const double derivative = (bce(s + eps, labels[k]) - bce(s - eps, labels[k])) / (2 * eps);
    // float output of an O(scale) value: 1e-7; the difference quotient in long double: ~1e-9.
    EXPECT_NEAR(grad[k], derivative * scale, 1e-7) << k;
  }
}

// The LSTM cell against a double reference, and its backward against finite differences of
//   L = sum(grad_h o h) + sum(grad_c o c)
// as a function of pre (n, 4h) and c_prev (grad_c plays the gradient carried into c from the next step).
TEST(CpuLstm, CellMatchesReferenceAndBackwardMatchesFiniteDifferences) {
  std::mt19937_64 gen(8);
  const int64_t h = 7;
  HostMatrix pre = random_matrix(gen, -3.0f, 3.0f, kRows, 4 * h), c_prev = random_matrix(gen, -1.0f, 1.0f, kRows, h);
  HostMatrix grad_h = random_matrix(gen, -1.0f, 1.0f, kRows, h), grad_c = random_matrix(gen, -1.0f, 1.0f, kRows, h);
  HostMatrix gates(kRows, 4 * h, kPad), c(kRows, h, kPad), out(kRows, h, kPad);
  kernels::cpu::lstm_cell(pre.cview(), c_prev.cview(), gates.view(), c.view(), out.view());
  struct Cell {
    double i, f, g, o, c, h;
  };
  auto cell = [&](int64_t r, int64_t k) {
    Cell v;
    v.i = sigmoid_ref(pre(r, k));
    v.f = sigmoid_ref(pre(r, h + k));
    v.g = std::tanh(static_cast<double>(pre(r, 2 * h + k)));
    v.o = sigmoid_ref(pre(r, 3 * h + k));
    v.c = v.f * c_prev(r, k) + v.i * v.g;
    v.h = v.o * std::tanh(v.c);
    return v;
  };
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t k = 0; k < h; ++k) {
      const Cell v = cell(r, k);
      // a few float roundings of O(1) values after libmvec's exp/tanh: 2e-6.
      EXPECT_NEAR(gates(r, k), v.i, 2e-6);
      EXPECT_NEAR(gates(r, h + k), v.f, 2e-6);
      EXPECT_NEAR(gates(r, 2 * h + k), v.g, 2e-6);
      EXPECT_NEAR(gates(r, 3 * h + k), v.o, 2e-6);
      EXPECT_NEAR(c(r, k), v.c, 2e-6);
      EXPECT_NEAR(out(r, k), v.h, 2e-6);
    }
  EXPECT_TRUE(gates.padding_intact() && c.padding_intact() && out.padding_intact());

  HostMatrix grad_pre(kRows, 4 * h, kPad), grad_c_prev = grad_c;  // aliasing grad_c, as a cell would
  kernels::cpu::lstm_cell_backward(grad_h.cview(), grad_c_prev.cview(), gates.cview(), c_prev.cview(), c.cview(),
                                   grad_pre.view(), grad_c_prev.view());
  auto loss_at = [&](int64_t r, int64_t k) {
    return [&, r, k] {
      const Cell v = cell(r, k);
      return grad_h(r, k) * v.h + grad_c(r, k) * v.c;
    };
  };
  for (int64_t r = 0; r < kRows; r += 2)
    for (int64_t k = 0; k < h; ++k) {
      // O(1) derivatives: float rounding of the analytic side ~1e-6, truncation ~1e-6: 2e-5.
      for (int64_t gate = 0; gate < 4; ++gate)
        EXPECT_NEAR(grad_pre(r, gate * h + k), central_difference(pre, r, gate * h + k, loss_at(r, k)), 2e-5)
            << "row " << r << " gate " << gate << " column " << k;
      EXPECT_NEAR(grad_c_prev(r, k), central_difference(c_prev, r, k, loss_at(r, k)), 2e-5) << r << " " << k;
    }
  EXPECT_TRUE(grad_pre.padding_intact() && grad_c_prev.padding_intact());
}
