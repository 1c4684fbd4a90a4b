// nn::Adam's gradient clipping (--clip-grad-norm): torch's clip_grad_norm_ (factor max_norm / (norm + 1e-6) on
// every gradient when the global L2 norm exceeds max_norm, before the weight decay is added), checked against
// the update written out in double; below the limit the step is bit for bit the unclipped one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "nn/adam.h"
#include "nn/parameters.h"

using namespace halogen;

namespace {

void fill_store(nn::ParameterStore& store, uint64_t seed, float grad_amplitude) {
  store.add("w0", 0, 4, 3, false);
  store.add("b0", 0, 1, 3, true);
  store.add("w1", 1, 3, 2, false);
  store.allocate(Device::cpu);
  store.initialize(seed);
  std::mt19937_64 gen(seed);
  float* g = store.grads().data();
  for (int64_t i = 0; i < store.total_size(); ++i)
    g[i] = grad_amplitude * std::uniform_real_distribution<float>(-1, 1)(gen);
}

}  // namespace

TEST(AdamClip, ScalesGradientsToTheNormBeforeWeightDecay) {
  nn::ParameterStore store;
  fill_store(store, 3, 50.0f);
  const int64_t n = store.total_size();
  std::vector<double> param(store.params().data(), store.params().data() + n);
  const std::vector<float> grad(store.grads().data(), store.grads().data() + n);
  double norm = 0;
  for (float g : grad) norm += double(g) * g;
  norm = std::sqrt(norm);
  ASSERT_GT(norm, 10.0);
  nn::AdamConfig config;
  config.lr = 0.05f;
  config.clip_grad_norm = 2.0f;
  config.weight_decay_per_layer = {0.1f};  // layer 0 only
  nn::Adam adam(store, config);
  adam.step();
  EXPECT_NEAR(adam.last_grad_norm(), norm, 1e-9 * norm);
  EXPECT_EQ(adam.clipped_steps(), 1);
  const double factor = 2.0 / (norm + 1e-6);
  for (int k = 0; k < store.count(); ++k) {
    const nn::ParameterInfo& info = store.info(k);
    const double decay = info.layer == 0 ? 0.1 : 0.0;
    for (int64_t i = info.offset; i < info.offset + info.size(); ++i) {
      const double g = grad[i] * factor + decay * param[i];
      // Step 1: m_hat = g, v_hat = g^2: the update is lr * g / (|g| + eps).
      const double expected = param[i] - 0.05 * g / (std::fabs(g) + 1e-8);
      EXPECT_NEAR(store.params().data()[i], expected, 1e-6) << info.name << " " << i;
    }
  }
}

TEST(AdamClip, BelowTheLimitTheStepIsTheUnclippedOne) {
  nn::ParameterStore clipped, plain;
  fill_store(clipped, 9, 0.01f);
  fill_store(plain, 9, 0.01f);
  nn::AdamConfig with;
  with.clip_grad_norm = 100.0f;
  nn::Adam a(clipped, with), b(plain, nn::AdamConfig{});
  for (int step = 0; step < 3; ++step) {
    a.step();
    b.step();
  }
  EXPECT_EQ(a.clipped_steps(), 0);
  EXPECT_LT(a.last_grad_norm(), 100.0);
  EXPECT_EQ(b.last_grad_norm(), -1.0);
  for (int64_t i = 0; i < clipped.total_size(); ++i)
    EXPECT_EQ(clipped.params().data()[i], plain.params().data()[i]) << i;
}

TEST(AdamClip, SecondMomentSeesTheClippedGradient) {
  // Two steps with the same large gradient: v after clipping holds (factor * g)^2, so the second update is
  // again lr * sign(g) (bias-corrected m_hat / sqrt(v_hat) = 1 for a constant gradient), whatever the factor.
  nn::ParameterStore store;
  fill_store(store, 5, 1000.0f);
  nn::AdamConfig config;
  config.lr = 0.01f;
  config.clip_grad_norm = 0.5f;
  nn::Adam adam(store, config);
  const std::vector<float> before(store.params().data(), store.params().data() + store.total_size());
  const std::vector<float> grad(store.grads().data(), store.grads().data() + store.total_size());
  adam.step();
  adam.step();
  EXPECT_EQ(adam.clipped_steps(), 2);
  for (int64_t i = 0; i < store.total_size(); ++i) {
    if (std::fabs(grad[i]) < 1.0f) continue;  // eps matters for tiny clipped gradients
    const double expected = before[i] - 2 * 0.01 * (grad[i] > 0 ? 1 : -1);
    EXPECT_NEAR(store.params().data()[i], expected, 1e-5) << i;
  }
}
