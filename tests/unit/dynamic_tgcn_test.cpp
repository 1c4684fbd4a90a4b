// SnapshotSequence against dense references, and the T-GCN model: forward against an independent double
// reference, backward through time against central finite differences, state carried, truncation.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "comm/self_comm.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "dynamic/temporal_shards.h"
#include "core/rng.h"

namespace halogen::nn {
namespace {

using Dense = std::vector<double>;  // row-major

// S_t of the global snapshot: gcn (with self-loops) or chebyshev (-D^-1/2 A D^-1/2).
Dense dense_operator(const graph::Csr& a, bool chebyshev) {
  const int64_t n = a.num_rows;
  Dense s(n * n, 0.0);
  std::vector<double> deg(n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) deg[i] += a.indices[k] != i;
  for (int64_t i = 0; i < n; ++i) {
    if (!chebyshev) s[i * n + i] = 1.0 / (deg[i] + 1.0);
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
      const int64_t j = a.indices[k];
      if (j == i) continue;
      s[i * n + j] = chebyshev ? -1.0 / std::sqrt(deg[i] * deg[j]) : 1.0 / std::sqrt((deg[i] + 1.0) * (deg[j] + 1.0));
    }
  }
  return s;
}

std::vector<float> random_values(int64_t count, uint64_t stream, float scale = 1.0f) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = scale * (2.0f * static_cast<float>(rng::uniform(99, stream, i)) - 1.0f);
  return v;
}

TEST(SnapshotSequence, AggregateAndTransposeMatchDenseOperators) {
  const graph::Graph g = testing::small_temporal_graph(30, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  for (bool cheb : {false, true}) {
    SnapshotSequence seq(comm, shard, cheb ? graph::Normalization::chebyshev : graph::Normalization::gcn, 5);
    ASSERT_EQ(seq.steps(), 4);
    const int64_t n = g.num_nodes, f = 5;
    std::vector<float> x = random_values(n * f, 1);
    std::vector<float> out(n * f), outt(n * f);
    for (int64_t t = 0; t < 4; ++t) {
      const Dense s = dense_operator(g.snapshots[t], cheb);
      seq.aggregate(t, Matrix<const float>{x.data(), n, f, f}, Matrix<float>{out.data(), n, f, f});
      seq.aggregate_transpose(t, Matrix<const float>{x.data(), n, f, f}, Matrix<float>{outt.data(), n, f, f});
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < f; ++c) {
          double ref = 0, reft = 0;
          for (int64_t j = 0; j < n; ++j) {
            ref += s[i * n + j] * x[j * f + c];
            reft += s[j * n + i] * x[j * f + c];
          }
          EXPECT_NEAR(out[i * f + c], ref, 1e-5) << "t " << t << " cheb " << cheb;
          EXPECT_NEAR(outt[i * f + c], reft, 1e-5) << "t " << t << " cheb " << cheb;
        }
    }
  }
}

TEST(SnapshotSequence, AggregateManyEqualsOneAtATime) {
  const graph::Graph g = testing::small_temporal_graph(30, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  SnapshotSequence seq(comm, shard, graph::Normalization::gcn, 4);
  const int64_t n = g.num_nodes, f = 4;
  std::vector<std::vector<float>> xs, many(3, std::vector<float>(n * f)), single(3, std::vector<float>(n * f));
  std::vector<Matrix<const float>> in;
  std::vector<Matrix<float>> out;
  const std::vector<int64_t> steps = {2, 0, 3};
  for (int i = 0; i < 3; ++i) xs.push_back(random_values(n * f, 60 + i));
  for (int i = 0; i < 3; ++i) {
    in.push_back(Matrix<const float>{xs[i].data(), n, f, f});
    out.push_back(Matrix<float>{many[i].data(), n, f, f});
  }
  seq.aggregate_many(steps, in, out);
  for (int i = 0; i < 3; ++i) {
    seq.aggregate(steps[i], in[i], Matrix<float>{single[i].data(), n, f, f});
    for (int64_t k = 0; k < n * f; ++k) ASSERT_EQ(many[i][k], single[i][k]) << "step " << steps[i];
  }
}

// An independent double T-GCN over the global graph with the model's parameters (read from its store).
struct TgcnReference {
  int64_t n, in, h, out;
  std::vector<Dense> params;  // in store order
  Dense state;
  Dense step(const Dense& s, const std::vector<float>& x) {
    auto at = [](const Dense& m, int64_t cols, int64_t r, int64_t c) { return m[r * cols + c]; };
    const Dense &wc = params[0], &bc = params[1];
    Dense ax(n * in, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t c = 0; c < in; ++c) ax[i * in + c] += s[i * n + j] * x[j * in + c];
    Dense conv(n * 3 * h, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < 3 * h; ++c) {
        double v = bc[c];
        for (int64_t k = 0; k < in; ++k) v += ax[i * in + k] * at(wc, 3 * h, k, c);
        conv[i * 3 * h + c] = v;
      }
    auto gate = [&](int g, const Dense& second, int64_t i, int64_t c) {
      const Dense& l = params[2 + 2 * g];
      double v = params[3 + 2 * g][c];
      for (int64_t k = 0; k < h; ++k) v += conv[i * 3 * h + g * h + k] * at(l, h, k, c) + second[i * h + k] * at(l, h, h + k, c);
      return v;
    };
    Dense z(n * h), r(n * h), hr(n * h), next(n * h);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < h; ++c) {
        z[i * h + c] = 1.0 / (1.0 + std::exp(-gate(0, state, i, c)));
        r[i * h + c] = 1.0 / (1.0 + std::exp(-gate(1, state, i, c)));
      }
    for (int64_t i = 0; i < n * h; ++i) hr[i] = state[i] * r[i];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < h; ++c) {
        const double cand = std::tanh(gate(2, hr, i, c)), zz = z[i * h + c];
        next[i * h + c] = zz * state[i * h + c] + (1 - zz) * cand;
      }
    state = next;
    Dense y(n * out);
    const Dense &wh = params[8], &bh = params[9];
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < out; ++c) {
        double v = bh[c];
        for (int64_t k = 0; k < h; ++k) v += std::max(state[i * h + k], 0.0) * at(wh, out, k, c);
        y[i * out + c] = v;
      }
    return y;
  }
};

TemporalModelConfig small_config(int64_t window) {
  TemporalModelConfig config;
  config.kind = TemporalKind::tgcn;
  config.in = 3;
  config.hidden = 4;
  config.out = 2;
  config.max_window = window;
  config.seed = 5;
  return config;
}

TEST(Tgcn, ForwardMatchesDoubleReference) {
  const graph::Graph g = testing::small_temporal_graph(24, 5, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(5);
  auto model = make_temporal_model(config, g.num_nodes);
  // Non-zero biases, so that every term is exercised.
  std::vector<float> noise = random_values(model->store().total_size(), 3, 0.5f);
  float* p = model->store().params().data();
  for (int64_t i = 0; i < model->store().total_size(); ++i) p[i] += 0.2f * noise[i];
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  TgcnReference ref{g.num_nodes, 3, 4, 2, {}, Dense(g.num_nodes * 4, 0.0)};
  for (int k = 0; k < model->store().count(); ++k) {
    Matrix<float> m = model->store().param(k);
    ref.params.emplace_back(m.data, m.data + m.size());
  }
  const int64_t n = g.num_nodes;
  std::vector<float> y(n * 2);
  for (int64_t t = 0; t < 5; ++t) {
    std::vector<float> x = random_values(n * 3, 10 + t);
    model->forward(seq, t, Matrix<const float>{x.data(), n, 3, 3}, Matrix<float>{y.data(), n, 2, 2}, t % 2 == 0);
    const Dense yr = ref.step(dense_operator(g.snapshots[t], false), x);
    for (int64_t i = 0; i < n * 2; ++i) ASSERT_NEAR(y[i], yr[i], 1e-5) << "step " << t << " entry " << i;
  }
}

// Loss = sum over the window's steps of <y_t, R_t>; returns it, and with `backward` fills the gradients.
double window_loss(TemporalModel& model, SnapshotSequence& seq, const std::vector<std::vector<float>>& xs,
                   int64_t n, int64_t t0, int64_t steps, bool backward) {
  const int64_t in = model.config().in, out = model.config().out;
  std::vector<std::vector<float>> rs;
  double loss = 0;
  std::vector<float> y(n * out);
  for (int64_t k = 0; k < steps; ++k) {
    model.forward(seq, t0 + k, Matrix<const float>{xs[t0 + k].data(), n, in, in}, Matrix<float>{y.data(), n, out, out},
                  backward);
    rs.push_back(random_values(n * out, 50 + t0 + k));
    for (int64_t i = 0; i < n * out; ++i) loss += static_cast<double>(y[i]) * rs.back()[i];
  }
  if (backward) {
    for (int64_t k = steps - 1; k >= 0; --k)
      model.backward(seq, t0 + k, Matrix<const float>{rs[k].data(), n, out, out});
  }
  return loss;
}

TEST(Tgcn, BackwardThroughTimeMatchesFiniteDifferences) {
  const graph::Graph g = testing::small_temporal_graph(16, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(4);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 4; ++t) xs.push_back(random_values(n * 3, 20 + t));
  // From the zero state over the whole window: steps 1.. start from a non-zero state, so the path through H_prev
  // is checked. (A window that starts later has a state that depends on the parameters through the truncated
  // steps, which the FD would see and BPTT by design does not.)
  nn::ParameterStore& store = model->store();
  auto run = [&](bool backward) {
    model->reset_state();
    return window_loss(*model, seq, xs, n, 0, 4, backward);
  };
  store.zero_grads();
  run(true);
  std::vector<float> grads(store.grads().data(), store.grads().data() + store.total_size());
  float* p = store.params().data();
  int checked = 0;
  for (int64_t i = 0; i < store.total_size(); ++i) {
    const float keep = p[i], eps = 5e-4f;  // small: a relu kink of the head must not lie inside [p - eps, p + eps]
    p[i] = keep + eps;
    const double up = run(false);
    p[i] = keep - eps;
    const double down = run(false);
    p[i] = keep;
    const double fd = (up - down) / (2.0 * eps);
    EXPECT_NEAR(grads[i], fd, 2e-3 + 2e-2 * std::fabs(fd)) << "parameter entry " << i;
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST(Tgcn, StateIsCarriedAndWindowsContinueIt) {
  const graph::Graph g = testing::small_temporal_graph(20, 6, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(3);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 6; ++t) xs.push_back(random_values(n * 3, 30 + t));
  std::vector<float> straight(n * 2), windowed(n * 2), fresh(n * 2);
  model->reset_state();
  for (int64_t t = 0; t < 6; ++t)
    model->forward(seq, t, Matrix<const float>{xs[t].data(), n, 3, 3}, Matrix<float>{straight.data(), n, 2, 2}, false);
  model->reset_state();
  for (int64_t t = 0; t < 6; ++t) {
    if (t % 3 == 0) model->begin_window();
    model->forward(seq, t, Matrix<const float>{xs[t].data(), n, 3, 3}, Matrix<float>{windowed.data(), n, 2, 2}, true);
    if (t % 3 == 2) {
      std::vector<float> zero(n * 2, 0.0f);
      for (int k = 0; k < 3; ++k) model->backward(seq, t - k, Matrix<const float>{zero.data(), n, 2, 2});
    }
  }
  model->reset_state();
  model->forward(seq, 5, Matrix<const float>{xs[5].data(), n, 3, 3}, Matrix<float>{fresh.data(), n, 2, 2}, false);
  double diff = 0;
  for (int64_t i = 0; i < n * 2; ++i) {
    EXPECT_FLOAT_EQ(straight[i], windowed[i]);
    diff += std::fabs(straight[i] - fresh[i]);
  }
  EXPECT_GT(diff, 1e-3) << "the state after 5 steps must change step 5's output";
}

TEST(Tgcn, TruncationStopsGradientAtTheWindowStart) {
  // The gradient of a window must not depend on the steps before it except through the (constant) state:
  // perturbing x of step 0 changes window 2's loss but must not change window 2's parameter gradients' form,
  // i.e. the FD check above passes only with truncation. Here: gradient of window [2, 4) is identical whether
  // or not window [0, 2) was backpropagated first (nothing leaks across the boundary).
  const graph::Graph g = testing::small_temporal_graph(16, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(2);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 4; ++t) xs.push_back(random_values(n * 3, 40 + t));
  nn::ParameterStore& store = model->store();
  model->reset_state();
  window_loss(*model, seq, xs, n, 0, 2, true);
  store.zero_grads();
  model->begin_window();
  window_loss(*model, seq, xs, n, 2, 2, true);
  std::vector<float> a(store.grads().data(), store.grads().data() + store.total_size());
  model->reset_state();
  window_loss(*model, seq, xs, n, 0, 2, false);
  store.zero_grads();
  model->begin_window();
  window_loss(*model, seq, xs, n, 2, 2, true);
  for (int64_t i = 0; i < store.total_size(); ++i) ASSERT_EQ(a[i], store.grads().data()[i]);
}

}  // namespace
}  // namespace halogen::nn
