// GConvGRU (dynamic/gconvgru.cpp) on one rank: forward against an independent double-precision reference (dense
// L~_t from the global snapshot CSR, its own Chebyshev recursion and per-gate ChebConvs as PyG writes them) for
// K = 1, 2, 3; backward through time against central finite differences of that reference for every
// parameter; hidden state carried across steps and windows; truncation at the window start; prefetch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
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

// L~ = -D^-1/2 A D^-1/2 of the global snapshot (self-loops skipped, isolated rows zero; lambda_max = 2).
Dense scaled_laplacian(const graph::Csr& a) {
  const int64_t n = a.num_rows;
  std::vector<double> deg(n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) deg[i] += a.indices[k] != i;
  Dense l(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k) {
      const int64_t j = a.indices[k];
      if (j != i) l[i * n + j] = -1.0 / std::sqrt(deg[i] * deg[j]);
    }
  return l;
}

std::vector<float> random_values(int64_t count, uint64_t stream, float scale = 1.0f) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = scale * (2.0f * static_cast<float>(rng::uniform(77, stream, i)) - 1.0f);
  return v;
}

// The model in double over the global graph, reading its parameters from a flat vector laid out as the model's
// store (located by name, so the reference does not share the model's indexing).
struct GConvGruReference {
  int64_t n, in, h, out, K;
  std::map<std::string, int64_t> offset;  // tensor name -> offset in the flat vector
  Dense state;

  explicit GConvGruReference(nn::ParameterStore& store, int64_t nodes, const TemporalModelConfig& c)
      : n(nodes), in(c.in), h(c.hidden), out(c.out), K(c.cheb_k), state(nodes * c.hidden, 0.0) {
    for (int i = 0; i < store.count(); ++i) offset[store.info(i).name] = store.info(i).offset;
  }
  int64_t at(const std::string& name) const {
    auto it = offset.find(name);
    EXPECT_NE(it, offset.end()) << "no parameter " << name;
    return it == offset.end() ? 0 : it->second;
  }

  // PyG ChebConv: sum_k T_k(v) Theta_k + b; Theta_k of this gate = columns [col0, col0 + h) of the stored
  // (rows, width) tensor "<theta>k".
  Dense chebconv(const Dense& p, const Dense& l, const Dense& v, int64_t c, const std::string& theta, int64_t width,
                 int64_t col0, const std::string& bias) const {
    std::vector<Dense> t;
    t.push_back(v);
    for (int64_t k = 1; k < K; ++k) {
      Dense next(n * c, 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t f = 0; f < c; ++f) next[i * c + f] += l[i * n + j] * t[k - 1][j * c + f];
      if (k >= 2)
        for (int64_t e = 0; e < n * c; ++e) next[e] = 2.0 * next[e] - t[k - 2][e];
      t.push_back(next);
    }
    Dense result(n * h, 0.0);
    const int64_t b = at(bias);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < h; ++o) {
        double s = p[b + o];
        for (int64_t k = 0; k < K; ++k) {
          const int64_t w = at(theta + std::to_string(k));
          for (int64_t f = 0; f < c; ++f) s += t[k][i * c + f] * p[w + f * width + col0 + o];
        }
        result[i * h + o] = s;
      }
    return result;
  }

  Dense step(const Dense& p, const Dense& l, const std::vector<float>& x_float) {
    const Dense x(x_float.begin(), x_float.end());
    const Dense xz = chebconv(p, l, x, in, "gconvgru.conv_x.theta", 3 * h, 0, "gconvgru.conv_x_z.bias");
    const Dense xr = chebconv(p, l, x, in, "gconvgru.conv_x.theta", 3 * h, h, "gconvgru.conv_x_r.bias");
    const Dense xh = chebconv(p, l, x, in, "gconvgru.conv_x.theta", 3 * h, 2 * h, "gconvgru.conv_x_h.bias");
    const Dense hz = chebconv(p, l, state, h, "gconvgru.conv_h_zr.theta", 2 * h, 0, "gconvgru.conv_h_z.bias");
    const Dense hr = chebconv(p, l, state, h, "gconvgru.conv_h_zr.theta", 2 * h, h, "gconvgru.conv_h_r.bias");
    Dense z(n * h), r(n * h), masked(n * h);
    for (int64_t e = 0; e < n * h; ++e) {
      z[e] = 1.0 / (1.0 + std::exp(-(xz[e] + hz[e])));
      r[e] = 1.0 / (1.0 + std::exp(-(xr[e] + hr[e])));
      masked[e] = state[e] * r[e];
    }
    const Dense hh = chebconv(p, l, masked, h, "gconvgru.conv_h_h.theta", h, 0, "gconvgru.conv_h_h.bias");
    for (int64_t e = 0; e < n * h; ++e) state[e] = z[e] * state[e] + (1.0 - z[e]) * std::tanh(xh[e] + hh[e]);
    Dense y(n * out);
    const int64_t w = at("head.weight"), b = at("head.bias");
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < out; ++c) {
        double v = p[b + c];
        for (int64_t k = 0; k < h; ++k) v += std::max(state[i * h + k], 0.0) * p[w + k * out + c];
        y[i * out + c] = v;
      }
    return y;
  }
};

TemporalModelConfig small_config(int k, int64_t window) {
  TemporalModelConfig config;
  config.kind = TemporalKind::gconvgru;
  config.in = 3;
  config.hidden = 4;
  config.out = 2;
  config.cheb_k = k;
  config.max_window = window;
  config.seed = 5;
  return config;
}

// Non-zero biases and distinct weights, so that every term is exercised.
void perturb(nn::ParameterStore& store) {
  std::vector<float> noise = random_values(store.total_size(), 3, 0.3f);
  float* p = store.params().data();
  for (int64_t i = 0; i < store.total_size(); ++i) p[i] += noise[i];
}

// "name[e]" of flat parameter entry i, for failure messages.
std::string ref_name(nn::ParameterStore& store, int64_t i) {
  for (int k = 0; k < store.count(); ++k) {
    const nn::ParameterInfo& info = store.info(k);
    if (i >= info.offset && i < info.offset + info.size()) return info.name + "[" + std::to_string(i - info.offset) + "]";
  }
  return "?";
}

Dense flat_params(nn::ParameterStore& store) {
  return Dense(store.params().data(), store.params().data() + store.total_size());
}

Matrix<const float> rows(const std::vector<float>& v, int64_t n, int64_t cols) {
  return Matrix<const float>{v.data(), n, cols, cols};
}
Matrix<float> rows(std::vector<float>& v, int64_t n, int64_t cols) { return Matrix<float>{v.data(), n, cols, cols}; }

class GConvGruK : public ::testing::TestWithParam<int> {};

TEST_P(GConvGruK, ForwardMatchesDoubleReference) {
  const int K = GetParam();
  const graph::Graph g = testing::small_temporal_graph(24, 5, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(K, 5);
  auto model = make_temporal_model(config, g.num_nodes);
  // 3 theta groups of K tensors, 6 biases, the head's two.
  ASSERT_EQ(model->store().count(), 3 * K + 6 + 2);
  perturb(model->store());
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  GConvGruReference ref(model->store(), g.num_nodes, config);
  const Dense p = flat_params(model->store());
  const int64_t n = g.num_nodes;
  std::vector<float> y(n * 2);
  for (int64_t t = 0; t < 5; ++t) {
    std::vector<float> x = random_values(n * 3, 10 + t);
    model->forward(seq, t, rows(x, n, 3), rows(y, n, 2), t % 2 == 0);
    const Dense yr = ref.step(p, scaled_laplacian(g.snapshots[t]), x);
    // Float against double over a few dozen O(1) terms per entry: errors near 1e-6.
    for (int64_t i = 0; i < n * 2; ++i) ASSERT_NEAR(y[i], yr[i], 1e-5) << "K " << K << " step " << t << " entry " << i;
  }
}

// Loss of one window = sum over its steps of <y_t, R_t> (R_t fixed random); forward(record) + backward.
double model_window(TemporalModel& model, SnapshotSequence& seq, const std::vector<std::vector<float>>& xs,
                    int64_t n, int64_t t0, int64_t steps, bool record, bool prefetch = false) {
  const int64_t in = model.config().in, out = model.config().out;
  std::vector<std::vector<float>> rs;
  if (prefetch) {
    std::vector<int64_t> snapshots;
    std::vector<Matrix<const float>> inputs;
    for (int64_t k = 0; k < steps; ++k) {
      snapshots.push_back(t0 + k);
      inputs.push_back(rows(xs[t0 + k], n, in));
    }
    model.prefetch(seq, snapshots, inputs);
  }
  double loss = 0;
  std::vector<float> y(n * out);
  for (int64_t k = 0; k < steps; ++k) {
    model.forward(seq, t0 + k, rows(xs[t0 + k], n, in), rows(y, n, out), record);
    rs.push_back(random_values(n * out, 50 + t0 + k));
    for (int64_t i = 0; i < n * out; ++i) loss += static_cast<double>(y[i]) * rs.back()[i];
  }
  if (record) {
    for (int64_t k = steps - 1; k >= 0; --k) model.backward(seq, t0 + k, rows(rs[k], n, out));
  }
  return loss;
}

// The same loss from the reference, starting from `state` (a constant: BPTT truncates at the window start).
double reference_window(GConvGruReference& ref, const Dense& p, const Dense& state, const std::vector<Dense>& ls,
                        const std::vector<std::vector<float>>& xs, int64_t t0, int64_t steps) {
  ref.state = state;
  double loss = 0;
  for (int64_t k = 0; k < steps; ++k) {
    const Dense y = ref.step(p, ls[t0 + k], xs[t0 + k]);
    const std::vector<float> r = random_values(static_cast<int64_t>(y.size()), 50 + t0 + k);
    for (size_t i = 0; i < y.size(); ++i) loss += y[i] * r[i];
  }
  return loss;
}

TEST_P(GConvGruK, BackwardThroughTimeMatchesFiniteDifferencesForEveryParameter) {
  // Window 1 = steps [0, 2) (recorded and backpropagated, so the model holds a non-zero carried gradient),
  // window 2 = steps [2, 5) from the state window 1 reached. Window 2's gradients must equal the finite
  // differences of the reference loss over steps [2, 5) from that state held constant: every parameter, the
  // path through H within the window, and nothing leaking from or into window 1.
  const int K = GetParam();
  const graph::Graph g = testing::small_temporal_graph(16, 5, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(K, 3);
  auto model = make_temporal_model(config, g.num_nodes);
  perturb(model->store());
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  std::vector<Dense> ls;
  for (int64_t t = 0; t < 5; ++t) {
    xs.push_back(random_values(n * 3, 20 + t));
    ls.push_back(scaled_laplacian(g.snapshots[t]));
  }
  nn::ParameterStore& store = model->store();
  model->reset_state();
  model->begin_window();
  model_window(*model, seq, xs, n, 0, 2, true);
  store.zero_grads();
  model->begin_window();
  const double loss = model_window(*model, seq, xs, n, 2, 3, true);
  const std::vector<float> grads(store.grads().data(), store.grads().data() + store.total_size());

  GConvGruReference ref(store, n, config);
  Dense p = flat_params(store);
  for (int64_t t = 0; t < 2; ++t) ref.step(p, ls[t], xs[t]);
  const Dense state = ref.state;
  ASSERT_NEAR(loss, reference_window(ref, p, state, ls, xs, 2, 3), 1e-4 * (1 + std::fabs(loss)));
  double largest = 0;
  for (int64_t i = 0; i < store.total_size(); ++i) {
    const double keep = p[i], eps = 1e-5;  // double: truncation ~eps^2, rounding ~1e-16/eps
    p[i] = keep + eps;
    const double up = reference_window(ref, p, state, ls, xs, 2, 3);
    p[i] = keep - eps;
    const double down = reference_window(ref, p, state, ls, xs, 2, 3);
    p[i] = keep;
    const double fd = (up - down) / (2.0 * eps);
    largest = std::max(largest, std::fabs(fd));
    // The model's gradient is float: each entry sums ~n * steps * K products of O(1) terms (errors ~1e-6
    // relative to their absolute sum), so 1e-4 absolute plus 1e-4 relative is wide enough and far below the
    // size of any missing term.
    EXPECT_NEAR(grads[i], fd, 1e-4 + 1e-4 * std::fabs(fd)) << "K " << K << " " << ref_name(store, i);
  }
  EXPECT_GT(largest, 1e-2) << "the loss must depend on the parameters";
}

INSTANTIATE_TEST_SUITE_P(ChebyshevTerms, GConvGruK, ::testing::Values(1, 2, 3));

TEST(GConvGru, StateIsCarriedAndWindowsContinueIt) {
  const graph::Graph g = testing::small_temporal_graph(20, 6, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(3, 3);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 6; ++t) xs.push_back(random_values(n * 3, 30 + t));
  std::vector<std::vector<float>> straight(6, std::vector<float>(n * 2)), windowed = straight;
  std::vector<float> fresh(n * 2), zero(n * 2, 0.0f);
  model->reset_state();
  for (int64_t t = 0; t < 6; ++t) model->forward(seq, t, rows(xs[t], n, 3), rows(straight[t], n, 2), false);
  // Two recorded windows of 3 steps with backward in between (the second one prefetched).
  model->reset_state();
  for (int64_t w = 0; w < 2; ++w) {
    model->begin_window();
    if (w == 1) {
      std::vector<int64_t> snapshots = {3, 4, 5};
      std::vector<Matrix<const float>> inputs = {rows(xs[3], n, 3), rows(xs[4], n, 3), rows(xs[5], n, 3)};
      model->prefetch(seq, snapshots, inputs);
    }
    for (int64_t t = 3 * w; t < 3 * w + 3; ++t)
      model->forward(seq, t, rows(xs[t], n, 3), rows(windowed[t], n, 2), true);
    for (int64_t t = 3 * w + 2; t >= 3 * w; --t) model->backward(seq, t, rows(zero, n, 2));
  }
  model->reset_state();
  model->forward(seq, 5, rows(xs[5], n, 3), rows(fresh, n, 2), false);
  double diff = 0;
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t i = 0; i < n * 2; ++i) ASSERT_EQ(straight[t][i], windowed[t][i]) << "step " << t << " entry " << i;
  for (int64_t i = 0; i < n * 2; ++i) diff += std::fabs(straight[5][i] - fresh[i]);
  EXPECT_GT(diff, 1e-3) << "the state after 5 steps must change step 5's output";
}

TEST(GConvGru, TruncationKeepsWindowGradientsIndependentOfTheWindowBefore) {
  // Window 2's gradients are the same (bitwise) whether window 1 was backpropagated (leaving a carried gradient
  // and its recorded slots) or only run forward: nothing flows across the boundary in either direction.
  const graph::Graph g = testing::small_temporal_graph(16, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(2, 2);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 4; ++t) xs.push_back(random_values(n * 3, 40 + t));
  nn::ParameterStore& store = model->store();
  model->reset_state();
  model_window(*model, seq, xs, n, 0, 2, true);
  store.zero_grads();
  model->begin_window();
  model_window(*model, seq, xs, n, 2, 2, true);
  std::vector<float> a(store.grads().data(), store.grads().data() + store.total_size());
  model->reset_state();
  model_window(*model, seq, xs, n, 0, 2, false);
  store.zero_grads();
  model->begin_window();
  model_window(*model, seq, xs, n, 2, 2, true);
  double norm = 0;
  for (int64_t i = 0; i < store.total_size(); ++i) {
    ASSERT_EQ(a[i], store.grads().data()[i]) << ref_name(store, i);
    norm += std::fabs(a[i]);
  }
  EXPECT_GT(norm, 1e-3);
}

TEST(GConvGru, PrefetchedWindowEqualsStepByStep) {
  const graph::Graph g = testing::small_temporal_graph(20, 4, 3);
  const graph::Shard shard = testing::temporal_shard(g, 1, 0);
  comm::SelfComm comm;
  const TemporalModelConfig config = small_config(3, 4);
  auto model = make_temporal_model(config, g.num_nodes);
  SnapshotSequence seq(comm, shard, temporal_normalization(config.kind), temporal_max_width(config));
  const int64_t n = g.num_nodes;
  std::vector<std::vector<float>> xs;
  for (int64_t t = 0; t < 4; ++t) xs.push_back(random_values(n * 3, 70 + t));
  nn::ParameterStore& store = model->store();
  double loss[2];
  std::vector<float> grads[2];
  for (int prefetch = 0; prefetch < 2; ++prefetch) {
    model->reset_state();
    store.zero_grads();
    loss[prefetch] = model_window(*model, seq, xs, n, 0, 4, true, prefetch == 1);
    grads[prefetch].assign(store.grads().data(), store.grads().data() + store.total_size());
  }
  EXPECT_EQ(loss[0], loss[1]);
  for (int64_t i = 0; i < store.total_size(); ++i) ASSERT_EQ(grads[0][i], grads[1][i]) << ref_name(store, i);
}

TEST(GConvGru, InitialisationHasPygGlorotBoundsPerGate) {
  TemporalModelConfig config = small_config(2, 1);
  config.in = 5;
  config.hidden = 8;
  auto model = make_temporal_model(config, 3);
  nn::ParameterStore& store = model->store();
  for (int k = 0; k < store.count(); ++k) {
    const nn::ParameterInfo& info = store.info(k);
    Matrix<float> m = store.param(k);
    double largest = 0;
    for (int64_t e = 0; e < m.size(); ++e) largest = std::max(largest, std::fabs(double(m.data[e])));
    if (info.is_bias) {
      EXPECT_EQ(largest, 0.0) << info.name;
    } else if (info.name.rfind("gconvgru.", 0) == 0) {
      // Each gate's Theta_k is a Linear(rows, hidden): bound sqrt(6 / (rows + hidden)); drawn close to it.
      const double bound = std::sqrt(6.0 / double(info.rows + config.hidden));
      EXPECT_LE(largest, bound * (1 + 1e-6)) << info.name;
      EXPECT_GT(largest, 0.8 * bound) << info.name;
    }
  }
}

}  // namespace
}  // namespace halogen::nn
