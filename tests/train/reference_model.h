#pragma once
// A plain double-precision, dense, single-process implementation of the model of nn/model.h, written from
// the math in DESIGN.md (not from the engine's code): the oracle for forward values and, by central finite
// differences, for gradients. O(n^2) memory: tiny graphs only. Test code.
#include <cmath>
#include <cstdint>
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

  Dense adjacency() const {
    const int64_t n = g.num_nodes;
    Dense a(n, std::vector<double>(n, 0.0));
    for (int64_t i = 0; i < n; ++i) {
      const double di = static_cast<double>(g.adjacency.degree(i));
      if (config.kind == nn::ConvKind::gcn) a[i][i] = 1.0 / (di + 1.0);
      for (int64_t k = g.adjacency.indptr[i]; k < g.adjacency.indptr[i + 1]; ++k) {
        const int64_t j = g.adjacency.indices[k];
        const double dj = static_cast<double>(g.adjacency.degree(j));
        a[i][j] = config.kind == nn::ConvKind::gcn ? 1.0 / std::sqrt((di + 1.0) * (dj + 1.0)) : 1.0 / di;
      }
    }
    return a;
  }

  // Returns the mean cross-entropy over labelled training vertices for the given flat parameters.
  double loss(const std::vector<double>& params, int64_t epoch, bool training) const {
    const int64_t n = g.num_nodes;
    const Dense a = adjacency();
    const double p = training ? config.dropout : 0.0;
    auto dropout = [&](Dense& x, int layer) {
      if (p == 0.0) return;
      const uint64_t stream = rng::stream_id(rng::kDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(layer));
      const int64_t f = static_cast<int64_t>(x[0].size());
      for (int64_t v = 0; v < n; ++v)
        for (int64_t c = 0; c < f; ++c)
          x[v][c] = rng::uniform(config.seed, stream, static_cast<uint64_t>(v * f + c)) >= p ? x[v][c] / (1.0 - p) : 0.0;
    };
    Dense x(n, std::vector<double>(widths[0]));
    for (int64_t v = 0; v < n; ++v)
      for (int64_t c = 0; c < widths[0]; ++c) x[v][c] = g.features[v * widths[0] + c];
    dropout(x, 0);
    int k = 0;
    for (int l = 0; l < config.layers; ++l) {
      const int64_t fin = widths[l], fout = widths[l + 1];
      const double* w = params.data() + infos[k++].offset;
      const double* w_self = config.kind == nn::ConvKind::sage ? params.data() + infos[k++].offset : nullptr;
      const double* b = params.data() + infos[k++].offset;
      Dense ax(n, std::vector<double>(fin, 0.0));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
          if (a[i][j] != 0.0)
            for (int64_t c = 0; c < fin; ++c) ax[i][c] += a[i][j] * x[j][c];
      Dense z(n, std::vector<double>(fout, 0.0));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < fout; ++o) {
          double sum = b[o];
          for (int64_t c = 0; c < fin; ++c) {
            sum += ax[i][c] * w[c * fout + o];
            if (w_self) sum += x[i][c] * w_self[c * fout + o];
          }
          z[i][o] = sum;
        }
      if (l + 1 < config.layers) {
        for (auto& row : z)
          for (double& value : row) value = std::max(value, 0.0);
        dropout(z, l + 1);
      }
      x = std::move(z);
    }
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
};

}  // namespace halogen::testing
