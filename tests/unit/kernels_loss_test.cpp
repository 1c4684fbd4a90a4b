// CPU loss, accuracy and optimiser: softmax cross-entropy against a double reference and finite differences,
// argmax tie-breaking, and Adam against the torch.optim.Adam update written out in double.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>

#include "kernels/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using namespace halogen::kernels;
using namespace halogen::kernels::test;

namespace {

double reference_row_loss(const HostMatrix& logits, int64_t r, int32_t label) {
  double max_logit = -INFINITY;
  for (int64_t c = 0; c < logits.cols; ++c) max_logit = std::max(max_logit, double(logits(r, c)));
  double sum = 0.0;
  for (int64_t c = 0; c < logits.cols; ++c) sum += std::exp(double(logits(r, c)) - max_logit);
  return std::log(sum) + max_logit - logits(r, label);
}

}  // namespace

TEST(CpuSoftmaxCrossEntropy, ValueAndGradientMatchReference) {
  std::mt19937_64 gen(21);
  for (int64_t classes : {1, 2, 7, 40}) {
    const int64_t n = 60;
    HostMatrix logits(n, classes, 3), grad(n, classes, 1);
    logits.randomize(gen, -5.0f, 5.0f);
    logits(0, 0) = 80.0f;  // large logits must not overflow (max subtracted)
    grad.randomize(gen);   // "=": old contents must not survive
    std::vector<int32_t> labels(n);
    for (auto& label : labels) label = std::uniform_int_distribution<int32_t>(0, int32_t(classes) - 1)(gen);
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < n; r += 2) rows.push_back(r);  // every other row is in the mask
    const float scale = 1.0f / 123.0f;
    const double loss =
        softmax_cross_entropy(logits.cview(), Span<const int32_t>{labels.data(), n},
                              Span<const int64_t>{rows.data(), int64_t(rows.size())}, scale, grad.view());
    double expected = 0.0;
    for (int64_t r : rows) expected += reference_row_loss(logits, r, labels[r]);
    EXPECT_NEAR(loss, expected, 1e-5 * (1.0 + std::fabs(expected))) << "classes " << classes;  // float logits
    for (int64_t r = 0; r < n; ++r) {
      const bool in_mask = r % 2 == 0;
      double max_logit = -INFINITY, sum = 0.0;
      for (int64_t c = 0; c < classes; ++c) max_logit = std::max(max_logit, double(logits(r, c)));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(double(logits(r, c)) - max_logit);
      for (int64_t c = 0; c < classes; ++c) {
        const double softmax = std::exp(double(logits(r, c)) - max_logit) / sum;
        const double want = in_mask ? (softmax - (c == labels[r])) * scale : 0.0;
        ASSERT_NEAR(grad(r, c), want, 1e-6 * scale) << r << ", " << c;  // float rounding of a value <= scale
      }
    }
    EXPECT_TRUE(grad.padding_intact());
  }
}

TEST(CpuSoftmaxCrossEntropy, GradientIsFiniteDifferenceOfLoss) {
  std::mt19937_64 gen(22);
  const int64_t n = 5, classes = 4;
  HostMatrix logits(n, classes), grad(n, classes);
  logits.randomize(gen, -2.0f, 2.0f);
  std::vector<int32_t> labels = {0, 3, 1, 2, 2};
  std::vector<int64_t> rows = {0, 1, 3, 4};
  const Span<const int32_t> label_span{labels.data(), n};
  const Span<const int64_t> row_span{rows.data(), 4};
  softmax_cross_entropy(logits.cview(), label_span, row_span, 1.0f, grad.view());
  HostMatrix scratch(n, classes);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < classes; ++c) {
      const float saved = logits(r, c), step = 1e-2f;
      logits(r, c) = saved + step;
      const double up = softmax_cross_entropy(logits.cview(), label_span, row_span, 1.0f, scratch.view());
      logits(r, c) = saved - step;
      const double down = softmax_cross_entropy(logits.cview(), label_span, row_span, 1.0f, scratch.view());
      logits(r, c) = saved;
      // Central difference: truncation error O(step^2 * |f'''|) ~ 1e-4 for these O(1) logits; float loss
      // ~1e-6.
      EXPECT_NEAR(grad(r, c), (up - down) / (2.0 * step), 5e-4) << r << ", " << c;
    }
}

TEST(CpuSoftmaxCrossEntropy, EmptyRowListGivesZero) {
  HostMatrix logits(3, 2), grad(3, 2);
  std::mt19937_64 gen(23);
  logits.randomize(gen);
  grad.randomize(gen);
  std::vector<int32_t> labels = {0, 1, 0};
  EXPECT_EQ(softmax_cross_entropy(logits.cview(), Span<const int32_t>{labels.data(), 3},
                                  Span<const int64_t>{}, 1.0f, grad.view()),
            0.0);
  for (float value : grad.data) EXPECT_EQ(value, 0.0f);
}

TEST(CpuSoftmaxCrossEntropy, LossSumBitwiseIdenticalForAnyThreadCount) {
  std::mt19937_64 gen(24);
  const int64_t n = 5000, classes = 10;
  HostMatrix logits(n, classes), grad(n, classes);
  logits.randomize(gen, -3.0f, 3.0f);
  std::vector<int32_t> labels(n);
  for (auto& label : labels) label = std::uniform_int_distribution<int32_t>(0, 9)(gen);
  std::vector<int64_t> rows(n);
  for (int64_t r = 0; r < n; ++r) rows[r] = r;
  const int saved = omp_get_max_threads();
  std::vector<double> losses;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    losses.push_back(softmax_cross_entropy(logits.cview(), Span<const int32_t>{labels.data(), n},
                                           Span<const int64_t>{rows.data(), n}, 1.0f, grad.view()));
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(losses[0], losses[2]);
}

TEST(CpuCountCorrect, ArgmaxWithTiesToLowestIndex) {
  HostMatrix logits(5, 3);
  const float values[5][3] = {{1, 2, 3}, {5, 5, 1}, {0, 0, 0}, {-1, -3, -2}, {2, 9, 9}};
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 3; ++c) logits(r, c) = values[r][c];
  // argmax: 2, 0 (tie), 0 (tie), 0, 1 (tie)
  std::vector<int32_t> labels = {2, 1, 0, 0, 2};  // right, wrong, right, right, wrong
  std::vector<int64_t> all = {0, 1, 2, 3, 4}, some = {1, 3};
  const Span<const int32_t> label_span{labels.data(), 5};
  EXPECT_EQ(count_correct(logits.cview(), label_span, Span<const int64_t>{all.data(), 5}), 3);
  EXPECT_EQ(count_correct(logits.cview(), label_span, Span<const int64_t>{some.data(), 2}), 1);
  EXPECT_EQ(count_correct(logits.cview(), label_span, Span<const int64_t>{}), 0);
}

TEST(CpuAdam, MatchesTorchUpdateOverSeveralSteps) {
  std::mt19937_64 gen(25);
  const int64_t n = 37;
  std::vector<float> param(n), m(n, 0.0f), v(n, 0.0f);
  for (auto& value : param) value = std::uniform_real_distribution<float>(-1, 1)(gen);
  std::vector<double> ref_param(param.begin(), param.end()), ref_m(n, 0.0), ref_v(n, 0.0);
  AdamParams params;
  params.lr = 0.01f;
  params.weight_decay = 5e-4f;
  for (int64_t step = 1; step <= 5; ++step) {
    std::vector<float> grad(n);
    for (auto& value : grad) value = std::uniform_real_distribution<float>(-1, 1)(gen);
    params.step = step;
    adam_step(Span<float>{param.data(), n}, Span<const float>{grad.data(), n}, Span<float>{m.data(), n},
              Span<float>{v.data(), n}, params);
    for (int64_t i = 0; i < n; ++i) {
      const double g = grad[i] + double(params.weight_decay) * ref_param[i];
      ref_m[i] = params.beta1 * ref_m[i] + (1.0 - params.beta1) * g;
      ref_v[i] = params.beta2 * ref_v[i] + (1.0 - params.beta2) * g * g;
      const double m_hat = ref_m[i] / (1.0 - std::pow(double(params.beta1), double(step)));
      const double v_hat = ref_v[i] / (1.0 - std::pow(double(params.beta2), double(step)));
      ref_param[i] -= params.lr * m_hat / (std::sqrt(v_hat) + params.eps);
    }
  }
  // Each step moves a parameter by at most ~lr; float rounding of the update is ~1e-7 relative per step.
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(param[i], ref_param[i], 1e-6) << i;
}

TEST(CpuAdam, FirstStepMovesByLearningRateAgainstGradientSign) {
  std::vector<float> param = {1.0f, -2.0f, 0.5f}, grad = {0.3f, -4.0f, 1e-3f}, m(3, 0.0f), v(3, 0.0f);
  AdamParams params;
  params.lr = 0.1f;
  adam_step(Span<float>{param.data(), 3}, Span<const float>{grad.data(), 3}, Span<float>{m.data(), 3},
            Span<float>{v.data(), 3}, params);
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps) = lr * sign(g) (eps relative 1e-5).
  EXPECT_NEAR(param[0], 0.9f, 1e-6);
  EXPECT_NEAR(param[1], -1.9f, 1e-6);
  EXPECT_NEAR(param[2], 0.4f, 1e-5);
}
