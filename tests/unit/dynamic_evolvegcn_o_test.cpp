// The EvolveGCN-O model (dynamic/evolvegcn_o.cpp) on one rank: forward against an independent double-precision
// reference (dense Â_t from the global snapshot CSR, its own matrix-GRU loop), backward through a window
// against central finite differences of that reference for every parameter (both product orders, the first
// window from W_0 and a later, truncated window), the weight state carried across steps and windows, and
// truncation (W_0 gets nothing from a later window).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "comm/self_comm.h"
#include "core/rng.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "dynamic/temporal_shards.h"

namespace halogen::nn {
namespace {

using Dense = std::vector<double>;  // row-major

// Â_t = D^-1/2 (A_t + I) D^-1/2 of the global snapshot, dense.
Dense dense_gcn_operator(const graph::Csr& a) {
  const int64_t n = a.num_rows;
  Dense s(n * n, 0.0);
  std::vector<double> deg(n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) deg[i] += a.indices[k] != i;
  for (int64_t i = 0; i < n; ++i) {
    s[i * n + i] = 1.0 / (deg[i] + 1.0);
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
      const int64_t j = a.indices[k];
      if (j != i) s[i * n + j] = 1.0 / std::sqrt((deg[i] + 1.0) * (deg[j] + 1.0));
    }
  }
  return s;
}

std::vector<float> random_values(int64_t count, uint64_t stream, float scale = 1.0f) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = scale * (2.0f * static_cast<float>(rng::uniform(77, stream, i)) - 1.0f);
  return v;
}

// c (r, m) = a (r, k) b (k, m)
Dense product(const Dense& a, const Dense& b, int64_t r, int64_t k, int64_t m) {
  Dense c(r * m, 0.0);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += a[i * k + p] * b[p * m + j];
  return c;
}

// An independent double EvolveGCN-O over the global graph. Parameters in the store's order, which the test
// checks by name: per layer l: weight (W_0), gru.{w_z,u_z,b_z,w_r,u_r,b_r,w_h,u_h,b_h}; then head.weight,
// head.bias.
struct Reference {
  int64_t n, in, h, out;
  int layers;
  std::vector<Dense> params;
  std::vector<Dense> state;  // per layer: W of the last step

  int64_t d_in(int l) const { return l == 0 ? in : h; }
  const Dense& gru(int l, int k) const { return params[l * 10 + 1 + k]; }
  void reset() {
    state.clear();
    for (int l = 0; l < layers; ++l) state.push_back(params[l * 10]);
  }
  Dense evolve(int l, const Dense& q) const {
    const int64_t d = d_in(l), size = d * h;
    const Dense zw = product(gru(l, 0), q, d, d, h), zu = product(gru(l, 1), q, d, d, h);
    const Dense rw = product(gru(l, 3), q, d, d, h), ru = product(gru(l, 4), q, d, d, h);
    Dense z(size), r(size), rq(size), next(size);
    for (int64_t i = 0; i < size; ++i) {
      z[i] = 1.0 / (1.0 + std::exp(-(zw[i] + zu[i] + gru(l, 2)[i])));
      r[i] = 1.0 / (1.0 + std::exp(-(rw[i] + ru[i] + gru(l, 5)[i])));
      rq[i] = r[i] * q[i];
    }
    const Dense hw = product(gru(l, 6), q, d, d, h), hu = product(gru(l, 7), rq, d, d, h);
    for (int64_t i = 0; i < size; ++i) {
      const double cand = std::tanh(hw[i] + hu[i] + gru(l, 8)[i]);
      next[i] = (1.0 - z[i]) * q[i] + z[i] * cand;
    }
    return next;
  }
  Dense step(const Dense& s, const std::vector<float>& x) {
    Dense hidden(x.begin(), x.end());
    for (int l = 0; l < layers; ++l) {
      state[l] = evolve(l, state[l]);
      Dense next = product(product(s, hidden, n, n, d_in(l)), state[l], n, d_in(l), h);
      for (double& v : next) v = std::max(v, 0.0);
      hidden = next;
    }
    const Dense& wh = params[layers * 10];
    const Dense& bh = params[layers * 10 + 1];
    for (double& v : hidden) v = std::max(v, 0.0);  // the head's own relu
    Dense y = product(hidden, wh, n, h, out);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < out; ++c) y[i * out + c] += bh[c];
    return y;
  }
};

struct ModelRun {
  graph::Graph graph;
  graph::Shard shard;
  comm::SelfComm comm;
  TemporalModelConfig config;
  std::unique_ptr<TemporalModel> model;
  std::unique_ptr<SnapshotSequence> seq;
  std::vector<Dense> operators;
  std::vector<std::vector<float>> xs;  // per step (n, in)
  int64_t n = 0;

  ModelRun(int64_t nodes, int64_t steps, int64_t in, int64_t hidden, int64_t window) {
    graph = testing::small_temporal_graph(nodes, steps, 3);
    shard = testing::temporal_shard(graph, 1, 0);
    n = graph.num_nodes;
    config.kind = TemporalKind::evolvegcn_o;
    config.in = in;
    config.hidden = hidden;
    config.out = 2;
    config.layers = 2;
    config.max_window = window;
    config.seed = 9;
    model = make_temporal_model(config, n);
    // Non-zero GRU biases and head bias, so that every term is exercised.
    nn::ParameterStore& store = model->store();
    const std::vector<float> noise = random_values(store.total_size(), 3, 0.3f);
    for (int64_t i = 0; i < store.total_size(); ++i) store.params().data()[i] += noise[i];
    seq = std::make_unique<SnapshotSequence>(comm, shard, temporal_normalization(config.kind),
                                             temporal_max_width(config));
    for (int64_t t = 0; t < steps; ++t) {
      operators.push_back(dense_gcn_operator(graph.snapshots[t]));
      xs.push_back(random_values(n * in, 20 + t));
    }
  }

  Reference reference() {
    nn::ParameterStore& store = model->store();
    const char* gru_names[9] = {"w_z", "u_z", "b_z", "w_r", "u_r", "b_r", "w_h", "u_h", "b_h"};
    EXPECT_EQ(store.count(), config.layers * 10 + 2);
    for (int l = 0; l < config.layers; ++l) {
      const std::string prefix = "egcn.layer" + std::to_string(l) + ".";
      EXPECT_EQ(store.info(l * 10).name, prefix + "weight");
      for (int k = 0; k < 9; ++k) EXPECT_EQ(store.info(l * 10 + 1 + k).name, prefix + "gru." + gru_names[k]);
    }
    EXPECT_EQ(store.info(config.layers * 10).name, "head.weight");
    Reference ref{n, config.in, config.hidden, config.out, config.layers, {}, {}};
    for (int k = 0; k < store.count(); ++k) {
      Matrix<float> m = store.param(k);
      ref.params.emplace_back(m.data, m.data + m.size());
    }
    ref.reset();
    return ref;
  }

  Matrix<const float> x(int64_t t) const { return Matrix<const float>{xs[t].data(), n, config.in, config.in}; }
  // The loss's fixed random weights of step t: R_t (n, out).
  std::vector<float> loss_weights(int64_t t) const { return random_values(n * config.out, 50 + t); }

  // Runs steps [t0, t0 + steps) recorded, returns sum_t <y_t, R_t>, then backward in reverse order. With
  // `prefetch`, the window's inputs are handed to prefetch() first.
  double window(int64_t t0, int64_t steps, bool prefetch) {
    std::vector<float> y(n * config.out);
    double loss = 0;
    if (prefetch) {
      std::vector<int64_t> snapshots;
      std::vector<Matrix<const float>> inputs;
      for (int64_t k = 0; k < steps; ++k) {
        snapshots.push_back(t0 + k);
        inputs.push_back(x(t0 + k));
      }
      model->prefetch(*seq, snapshots, inputs);
    }
    for (int64_t k = 0; k < steps; ++k) {
      model->forward(*seq, t0 + k, x(t0 + k), Matrix<float>{y.data(), n, config.out, config.out}, true);
      const std::vector<float> r = loss_weights(t0 + k);
      for (int64_t i = 0; i < n * config.out; ++i) loss += static_cast<double>(y[i]) * r[i];
    }
    for (int64_t k = steps - 1; k >= 0; --k) {
      const std::vector<float> r = loss_weights(t0 + k);
      model->backward(*seq, t0 + k, Matrix<const float>{r.data(), n, config.out, config.out});
    }
    return loss;
  }

  // The same loss in double, from the reference's current state.
  double reference_window(Reference& ref, int64_t t0, int64_t steps) const {
    double loss = 0;
    for (int64_t k = 0; k < steps; ++k) {
      const Dense y = ref.step(operators[t0 + k], xs[t0 + k]);
      const std::vector<float> r = loss_weights(t0 + k);
      for (int64_t i = 0; i < n * config.out; ++i) loss += y[i] * r[i];
    }
    return loss;
  }
};

// (in, hidden): (3, 4) aggregates x first, (Â x) W; (5, 3) transforms first, Â (x W) (hidden < in).
struct Widths {
  int64_t in, hidden;
};
const Widths kWidths[] = {{3, 4}, {5, 3}};

TEST(EvolveGcnOModel, ForwardMatchesDoubleReference) {
  for (const Widths w : kWidths) {
    ModelRun s(24, 5, w.in, w.hidden, 5);
    Reference ref = s.reference();
    std::vector<float> y(s.n * 2);
    s.model->reset_state();
    for (int64_t t = 0; t < 5; ++t) {
      // Recorded and unrecorded steps advance the state alike.
      s.model->forward(*s.seq, t, s.x(t), Matrix<float>{y.data(), s.n, 2, 2}, t % 2 == 0);
      const Dense expected = ref.step(s.operators[t], s.xs[t]);
      // float32 through 2 GRU steps and 2 graph layers of O(1) values: a few ulps per op, far below 1e-5.
      for (int64_t i = 0; i < s.n * 2; ++i)
        ASSERT_NEAR(y[i], expected[i], 1e-5) << "in " << w.in << " step " << t << " entry " << i;
    }
    // The same window through prefetch() (all steps' layers in one pass per layer) gives the same outputs.
    ref.reset();
    s.model->reset_state();
    std::vector<int64_t> snapshots = {0, 1, 2, 3, 4};
    std::vector<Matrix<const float>> inputs;
    for (int64_t t = 0; t < 5; ++t) inputs.push_back(s.x(t));
    s.model->prefetch(*s.seq, snapshots, inputs);
    for (int64_t t = 0; t < 5; ++t) {
      s.model->forward(*s.seq, t, s.x(t), Matrix<float>{y.data(), s.n, 2, 2}, true);
      const Dense expected = ref.step(s.operators[t], s.xs[t]);
      for (int64_t i = 0; i < s.n * 2; ++i)
        ASSERT_NEAR(y[i], expected[i], 1e-5) << "prefetched, in " << w.in << " step " << t << " entry " << i;
    }
  }
}

// Central differences of the double reference (eps 1e-6: truncation ~1e-12, rounding ~1e-10, so the numeric
// gradient is exact to ~1e-9) against the model's float gradients, whose error is float rounding of O(1)-O(10)
// sums (~1e-6 relative; these cases pass even at 1e-6 + 1e-5): 1e-5 absolute + 1e-4 relative. `start` is the state the window starts from (frozen:
// truncated BPTT treats it as a constant); empty = W_0 (the first window after reset_state()).
void expect_gradients_match(ModelRun& s, const std::vector<float>& grads, const std::vector<Dense>& start, int64_t t0,
                            int64_t steps) {
  Reference ref = s.reference();
  const double eps = 1e-6;
  int checked = 0, nonzero = 0;
  for (size_t p = 0; p < ref.params.size(); ++p) {
    const int64_t offset = s.model->store().info(static_cast<int>(p)).offset;
    for (size_t e = 0; e < ref.params[p].size(); ++e) {
      const double keep = ref.params[p][e];
      auto loss = [&](double value) {
        ref.params[p][e] = value;
        ref.reset();
        if (!start.empty()) ref.state = start;
        return s.reference_window(ref, t0, steps);
      };
      const double numeric = (loss(keep + eps) - loss(keep - eps)) / (2 * eps);
      ref.params[p][e] = keep;
      const double analytic = grads[offset + e];
      EXPECT_NEAR(analytic, numeric, 1e-5 + 1e-4 * std::fabs(numeric))
          << s.model->store().info(static_cast<int>(p)).name << "[" << e << "]";
      ++checked;
      nonzero += std::fabs(numeric) > 1e-6;
    }
  }
  EXPECT_EQ(checked, s.model->store().total_size());
  EXPECT_GT(nonzero, checked / 2) << "most parameters must influence the loss, or the check proves little";
}

std::vector<float> gradients(TemporalModel& model) {
  const float* g = model.store().grads().data();
  return std::vector<float>(g, g + model.store().total_size());
}

TEST(EvolveGcnOModel, FirstWindowGradientsMatchFiniteDifferences) {
  for (const Widths w : kWidths) {
    SCOPED_TRACE("in " + std::to_string(w.in) + " hidden " + std::to_string(w.hidden));
    ModelRun s(16, 4, w.in, w.hidden, 4);
    s.model->store().zero_grads();
    s.model->reset_state();
    s.window(0, 4, false);
    const std::vector<float> grads = gradients(*s.model);
    expect_gradients_match(s, grads, {}, 0, 4);
    // prefetch() computes the same window in one pass per layer: the same gradients.
    s.model->store().zero_grads();
    s.model->reset_state();
    s.window(0, 4, true);
    const std::vector<float> prefetched = gradients(*s.model);
    for (size_t i = 0; i < grads.size(); ++i) ASSERT_FLOAT_EQ(prefetched[i], grads[i]) << i;
  }
}

TEST(EvolveGcnOModel, LaterWindowIsTruncatedAndGivesW0Nothing) {
  for (const Widths w : kWidths) {
    SCOPED_TRACE("in " + std::to_string(w.in) + " hidden " + std::to_string(w.hidden));
    ModelRun s(16, 6, w.in, w.hidden, 3);
    nn::ParameterStore& store = s.model->store();
    s.model->reset_state();
    s.window(0, 3, false);  // window 1: steps 0..2, backward done
    store.zero_grads();
    s.model->begin_window();
    s.window(3, 3, false);  // window 2: steps 3..5
    const std::vector<float> grads = gradients(*s.model);
    // W_0 of every layer: nothing from window 2 (its path goes through the frozen state before step 3).
    for (int l = 0; l < 2; ++l) {
      const nn::ParameterInfo& info = store.info(l * 10);
      ASSERT_EQ(info.name, "egcn.layer" + std::to_string(l) + ".weight");
      for (int64_t e = 0; e < info.size(); ++e) EXPECT_EQ(grads[info.offset + e], 0.0f) << info.name << " " << e;
    }
    // Every gradient equals the finite differences of window 2 started from the frozen state W_2 (the state
    // after steps 0..2 with the same parameters): W_0's numeric gradient is 0 there too.
    Reference ref = s.reference();
    s.reference_window(ref, 0, 3);
    expect_gradients_match(s, grads, ref.state, 3, 3);
  }
}

TEST(EvolveGcnOModel, StateIsCarriedAndWindowsContinueIt) {
  ModelRun s(20, 6, 3, 4, 3);
  const int64_t n = s.n;
  std::vector<float> straight(n * 2), windowed(n * 2), fresh(n * 2);
  s.model->reset_state();
  for (int64_t t = 0; t < 6; ++t)
    s.model->forward(*s.seq, t, s.x(t), Matrix<float>{straight.data(), n, 2, 2}, false);
  // Two recorded windows of 3 with backward in between: window 2 continues from window 1's weights.
  s.model->reset_state();
  for (int64_t t = 0; t < 6; ++t) {
    if (t % 3 == 0) s.model->begin_window();
    s.model->forward(*s.seq, t, s.x(t), Matrix<float>{windowed.data(), n, 2, 2}, true);
    if (t % 3 == 2) {
      const std::vector<float> zero(n * 2, 0.0f);
      for (int k = 0; k < 3; ++k) s.model->backward(*s.seq, t - k, Matrix<const float>{zero.data(), n, 2, 2});
    }
  }
  // Step 5 straight after reset_state() uses W_1 instead of W_6.
  s.model->reset_state();
  s.model->forward(*s.seq, 5, s.x(5), Matrix<float>{fresh.data(), n, 2, 2}, false);
  double diff = 0;
  for (int64_t i = 0; i < n * 2; ++i) {
    EXPECT_FLOAT_EQ(straight[i], windowed[i]) << i;
    diff += std::fabs(straight[i] - fresh[i]);
  }
  EXPECT_GT(diff, 1e-3) << "the weights evolved over 5 steps must change step 5's output";
}

TEST(EvolveGcnOModel, UnrecordedStepsLeaveTheRecordedWindowAlone) {
  ModelRun s(16, 5, 5, 3, 3);
  s.model->store().zero_grads();
  s.model->reset_state();
  s.window(0, 3, false);
  const std::vector<float> expected = gradients(*s.model);
  // Same window, but an evaluation step runs between the forward and the backward passes.
  s.model->store().zero_grads();
  s.model->reset_state();
  std::vector<float> y(s.n * 2);
  for (int64_t t = 0; t < 3; ++t) s.model->forward(*s.seq, t, s.x(t), Matrix<float>{y.data(), s.n, 2, 2}, true);
  s.model->forward(*s.seq, 4, s.x(4), Matrix<float>{y.data(), s.n, 2, 2}, false);
  for (int64_t t = 2; t >= 0; --t) {
    const std::vector<float> r = s.loss_weights(t);
    s.model->backward(*s.seq, t, Matrix<const float>{r.data(), s.n, 2, 2});
  }
  const std::vector<float> got = gradients(*s.model);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << i;
}

}  // namespace
}  // namespace halogen::nn
