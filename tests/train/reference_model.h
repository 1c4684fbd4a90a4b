#pragma once
// A plain double-precision, dense, single-process implementation of the model of nn/model.h, written from
// the math in DESIGN.md (not from the engine's code): the oracle for forward values and, by central finite
// differences, for gradients. O(n^2) memory: tiny graphs only. Test code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "core/rng.h"
#include "graph/graph.h"
#include "nn/model.h"
#include "nn/parameters.h"

namespace halogen::testing {

struct ReferenceModel {
  const graph::Graph& g;
  nn::ModelConfig config;
  std::vector<nn::ParameterInfo> infos;  // the engine's flat layout (names tell the role)
  std::vector<int64_t> widths;

  using Dense = std::vector<std::vector<double>>;

  // The model's aggregation operator, dense: gcn/appnp D^-1/2 (A + I) D^-1/2, sage the (weighted) mean, gin
  // the (weighted) sum without self-loops. With config.edge_weight, w_ij from the graph and weighted degrees.
  Dense adjacency() const {
    const int64_t n = g.num_nodes;
    const bool weighted = config.edge_weight;
    auto weight = [&](int64_t k) { return weighted ? static_cast<double>(g.adjacency.weight[k]) : 1.0; };
    std::vector<double> degree(n, 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = g.adjacency.indptr[i]; k < g.adjacency.indptr[i + 1]; ++k) degree[i] += weight(k);
    const bool gcn = config.kind == nn::ConvKind::gcn || config.kind == nn::ConvKind::appnp;
    Dense a(n, std::vector<double>(n, 0.0));
    for (int64_t i = 0; i < n; ++i) {
      if (gcn) a[i][i] = 1.0 / (degree[i] + 1.0);
      for (int64_t k = g.adjacency.indptr[i]; k < g.adjacency.indptr[i + 1]; ++k) {
        const int64_t j = g.adjacency.indices[k];
        if (gcn)
          a[i][j] = weight(k) / std::sqrt((degree[i] + 1.0) * (degree[j] + 1.0));
        else if (config.kind == nn::ConvKind::gin)
          a[i][j] = weight(k);
        else
          a[i][j] = weight(k) / degree[i];
      }
    }
    return a;
  }

  // The flat parameters of tensor `name` (the engine's registration names, nn/graph_conv.h), or nullptr.
  const double* tensor(const std::vector<double>& params, const std::string& name) const {
    for (const nn::ParameterInfo& info : infos)
      if (info.name == name) return params.data() + info.offset;
    return nullptr;
  }

  // Dropout with the engine's documented key (kernels/ops.h): element (v, c) of an (n, f) matrix is kept when
  // rng::dropout_keep(seed, stream, v * f + c) and then scaled by 1 / (1 - p). p = 0: unchanged.
  void drop(Dense& m, uint64_t stream, double p) const {
    if (p == 0.0) return;
    const int64_t f = static_cast<int64_t>(m[0].size());
    for (size_t v = 0; v < m.size(); ++v)
      for (int64_t c = 0; c < f; ++c)
        m[v][c] = rng::dropout_keep(config.seed, stream, static_cast<uint64_t>(static_cast<int64_t>(v) * f + c),
                                    rng::dropout_threshold(static_cast<float>(p)))
                      ? m[v][c] / (1.0 - p)
                      : 0.0;
  }

  static Dense product(const Dense& a, const Dense& x) {  // a: (n, n) sparse-ish, x: (n, f)
    const size_t n = a.size(), f = x[0].size();
    Dense out(n, std::vector<double>(f, 0.0));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        if (a[i][j] != 0.0)
          for (size_t c = 0; c < f; ++c) out[i][c] += a[i][j] * x[j][c];
    return out;
  }

  // x (n, fin) times w (fin, fout) plus b (fout; may be nullptr).
  static Dense linear(const Dense& x, const double* w, const double* b, int64_t fout) {
    const size_t n = x.size(), fin = x[0].size();
    Dense out(n, std::vector<double>(fout, 0.0));
    for (size_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < fout; ++o) {
        double sum = b ? b[o] : 0.0;
        for (size_t c = 0; c < fin; ++c) sum += x[i][c] * w[c * fout + o];
        out[i][o] = sum;
      }
    return out;
  }

  // GAT layer l (Velickovic et al., PyG GATConv with self-loops): per head k, H = x W, e_ij = leaky_relu(a_dst.H_i +
  // a_src.H_j, 0.2) over the stored edges (self-loops dropped) plus one self-loop per vertex, softmax per row,
  // attention dropout (the engine's documented key: kernels/ops.h edge_dropout), out_i = sum_j alpha_ij H_j;
  // with gat_per_head_dropout (nn/model.h) H's head k is dropout_k(x) W_k and the messages are dropout(H);
  // heads concatenated (hidden layers) or averaged (the last), plus the bias.
  Dense gat_layer(const Dense& x, const std::vector<double>& params, int l, int64_t fout, int64_t epoch,
                  bool training) const {
    const int64_t n = g.num_nodes;
    const bool concat = l + 1 < config.layers;
    const int64_t heads = concat ? config.gat_heads : config.gat_output_heads;
    const int64_t width = concat ? fout / heads : fout;
    const std::string prefix = "layer" + std::to_string(l) + ".";
    const double* w = tensor(params, prefix + "weight");
    Dense h = linear(x, w, nullptr, heads * width);
    // --gat-dropout original: head k's columns of H from its own dropout of x; messages from a dropout of H.
    const double feature_p = training && config.gat_per_head_dropout ? config.dropout : 0.0;
    auto feature_drop = [&](Dense& m, uint32_t tag) {
      drop(m, rng::stream_id(rng::kGatFeatureDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(l), tag),
           feature_p);
    };
    Dense messages = h;
    if (feature_p > 0) {
      const int64_t fin = static_cast<int64_t>(x[0].size());
      for (int64_t k = 0; k < heads; ++k) {
        Dense xk = x;
        feature_drop(xk, static_cast<uint32_t>(1 + k));
        for (int64_t v = 0; v < n; ++v)
          for (int64_t o = k * width; o < (k + 1) * width; ++o) {
            double sum = 0;
            for (int64_t c = 0; c < fin; ++c) sum += xk[v][c] * w[c * heads * width + o];
            h[v][o] = sum;
          }
      }
      messages = h;
      feature_drop(messages, 0);
    }
    const double* att_src = tensor(params, prefix + "att_src");
    const double* att_dst = tensor(params, prefix + "att_dst");
    const double* b = tensor(params, prefix + "bias");
    const double p = training ? config.attention_dropout : 0.0;
    const uint64_t stream = rng::stream_id(rng::kAttentionDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(l));
    Dense out(n, std::vector<double>(heads * width, 0.0));
    for (int64_t i = 0; i < n; ++i) {
      std::vector<int64_t> sources{i};
      for (int64_t k = g.adjacency.indptr[i]; k < g.adjacency.indptr[i + 1]; ++k)
        if (g.adjacency.indices[k] != i) sources.push_back(g.adjacency.indices[k]);
      for (int64_t k = 0; k < heads; ++k) {
        auto score = [&](int64_t v, const double* att) {
          double sum = 0;
          for (int64_t f = 0; f < width; ++f) sum += h[v][k * width + f] * att[k * width + f];
          return sum;
        };
        std::vector<double> e;
        for (int64_t j : sources) {
          const double z = score(i, att_dst) + score(j, att_src);
          e.push_back(z > 0 ? z : 0.2 * z);
        }
        const double max = *std::max_element(e.begin(), e.end());
        double total = 0;
        for (double& value : e) total += (value = std::exp(value - max));
        const uint64_t key = rng::uniform_u64(config.seed, stream, static_cast<uint64_t>(k / 4));
        for (size_t s = 0; s < sources.size(); ++s) {
          double alpha = e[s] / total;
          if (p > 0) {
            const uint32_t word = rng::pair_bits(key, static_cast<uint64_t>(i), static_cast<uint64_t>(sources[s])).v[k % 4];
            alpha = rng::word_uniform(word) >= p ? alpha / (1.0 - p) : 0.0;
          }
          for (int64_t f = 0; f < width; ++f) out[i][k * width + f] += alpha * messages[sources[s]][k * width + f];
        }
      }
    }
    Dense z(n, std::vector<double>(fout, 0.0));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < fout; ++o) {
        double value = b[o];
        if (concat)
          value += out[i][o];
        else
          for (int64_t k = 0; k < heads; ++k) value += out[i][k * width + o] / static_cast<double>(heads);
        z[i][o] = value;
      }
    return z;
  }

  // Returns the mean cross-entropy over labelled training vertices for the given flat parameters.
  double loss(const std::vector<double>& params, int64_t epoch, bool training) const {
    if (config.name == "gcnii") return gcnii_loss(params, epoch, training);
    const int64_t n = g.num_nodes;
    const Dense a = adjacency();
    // GAT with per-head dropout drops inside its layers (gat_layer) instead.
    const bool layers_drop = config.kind == nn::ConvKind::gat && config.gat_per_head_dropout;
    const double p = training && !layers_drop ? config.dropout : 0.0;
    auto dropout = [&](Dense& x, int layer) {
      drop(x, rng::stream_id(rng::kDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(layer)), p);
    };
    Dense x(n, std::vector<double>(widths[0]));
    for (int64_t v = 0; v < n; ++v)
      for (int64_t c = 0; c < widths[0]; ++c) x[v][c] = g.features[v * widths[0] + c];
    dropout(x, 0);
    for (int l = 0; l < config.layers; ++l) {
      const int64_t fin = widths[l], fout = widths[l + 1];
      const std::string prefix = "layer" + std::to_string(l) + ".";
      const double* w = tensor(params, prefix + "weight");
      const double* b = tensor(params, prefix + "bias");
      Dense z;
      if (config.kind == nn::ConvKind::gat) {
        z = gat_layer(x, params, l, fout, epoch, training);
      } else if (config.kind == nn::ConvKind::appnp) {
        z = linear(x, w, b, fout);
      } else if (config.kind == nn::ConvKind::gin) {
        const double* eps = tensor(params, prefix + "eps");
        Dense agg = product(a, x);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t c = 0; c < fin; ++c) agg[i][c] += (1.0 + (eps ? eps[0] : 0.0)) * x[i][c];
        Dense h = linear(agg, w, tensor(params, prefix + "inner_bias"), config.hidden);
        for (auto& row : h)
          for (double& value : row) value = std::max(value, 0.0);
        z = linear(h, tensor(params, prefix + "weight_out"), b, fout);
      } else {
        const double* w_self = tensor(params, prefix + "weight_self");
        z = linear(product(a, x), w, b, fout);
        if (w_self) {
          const Dense self = linear(x, w_self, nullptr, fout);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t o = 0; o < fout; ++o) z[i][o] += self[i][o];
        }
      }
      if (l + 1 < config.layers) {
        const bool elu = config.kind == nn::ConvKind::gat;
        for (auto& row : z)
          for (double& value : row) value = elu ? (value > 0 ? value : std::expm1(value)) : std::max(value, 0.0);
        dropout(z, l + 1);
      }
      x = std::move(z);
    }
    if (config.kind == nn::ConvKind::appnp) {  // P_k = (1 - alpha) Â P_{k-1} + alpha H
      const Dense h = x;
      const double alpha = config.appnp_alpha;
      for (int k = 0; k < config.appnp_k; ++k) {
        x = product(a, x);
        for (int64_t i = 0; i < n; ++i)
          for (size_t c = 0; c < x[i].size(); ++c) x[i][c] = (1.0 - alpha) * x[i][c] + alpha * h[i][c];
      }
    }
    return mean_train_loss(x);
  }

  // The mean cross-entropy of `logits` (n, C) over the labelled training vertices.
  double mean_train_loss(const Dense& x) const {
    double total = 0;
    int64_t count = 0;
    for (int64_t v : g.train) {
      if (g.labels[v] < 0) continue;
      double max = x[v][0];
      for (double value : x[v]) max = std::max(max, value);
      double sum = 0;
      for (double value : x[v]) sum += std::exp(value - max);
      total += std::log(sum) + max - x[v][g.labels[v]];
      ++count;
    }
    return total / static_cast<double>(count);
  }

  // GCNII (nn/models/gcnii.cpp; Chen et al.): h0 = relu(dropout(X) W_in + b_in); for l = 1 .. L,
  // s = (1 - alpha) Â dropout(h) + alpha h0 and h = relu(theta_l s W_l + (1 - theta_l) s), theta_l =
  // log(lambda / l + 1); logits = dropout(h) W_out + b_out. Dropout l keyed as the layer stack's (epoch, l).
  // alpha and lambda: config.values.
  double gcnii_loss(const std::vector<double>& params, int64_t epoch, bool training) const {
    const int64_t n = g.num_nodes, f = g.num_features, hidden = config.hidden;
    const double alpha = std::get<float>(config.values.at("alpha"));
    const double lambda = std::get<float>(config.values.at("lambda"));
    const double p = training ? config.dropout : 0.0;
    auto dropout = [&](Dense& x, int layer) {
      drop(x, rng::stream_id(rng::kDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(layer)), p);
    };
    auto relu = [](double value) { return std::max(value, 0.0); };
    Dense x(n, std::vector<double>(f));
    for (int64_t v = 0; v < n; ++v)
      for (int64_t c = 0; c < f; ++c) x[v][c] = g.features[v * f + c];
    dropout(x, 0);
    Dense h0 = linear(x, tensor(params, "input.weight"), tensor(params, "input.bias"), hidden);
    for (auto& row : h0)
      for (double& value : row) value = relu(value);
    const Dense a = adjacency();  // config.kind is gcn: Â with self-loops
    Dense h = h0;
    for (int l = 1; l <= config.layers; ++l) {
      dropout(h, l);
      Dense s = product(a, h);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < hidden; ++c) s[i][c] = (1.0 - alpha) * s[i][c] + alpha * h0[i][c];
      const double theta = std::log(lambda / l + 1.0);
      const Dense t = linear(s, tensor(params, "conv" + std::to_string(l) + ".weight"), nullptr, hidden);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < hidden; ++c) h[i][c] = relu(theta * t[i][c] + (1.0 - theta) * s[i][c]);
    }
    dropout(h, config.layers + 1);
    return mean_train_loss(linear(h, tensor(params, "output.weight"), tensor(params, "output.bias"), g.num_classes));
  }
};

}  // namespace halogen::testing
