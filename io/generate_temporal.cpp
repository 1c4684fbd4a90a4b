// Temporal SBM (io/temporal.h): an SBM whose edges churn and whose classes drift over T snapshots.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/rng.h"
#include "graph/build.h"
#include "io/declared_sizes.h"
#include "io/temporal.h"

namespace halogen::io {

namespace {

// Tags for rng::stream_id(kGraphGenerate, tag, step): what a number is drawn for at time step `step`.
// Values above generate.cpp's tags (1..6) so that no stream is shared with the static generators.
enum TemporalTag : uint32_t {
  kDriftTag = 101,    // index v: does v change class, and to which
  kChurnTag = 102,    // index u * N + v (u < v): is the edge dropped
  kNewEdgeTag = 103,  // index j: the j-th new pair
};

// The undirected pairs (u < v) of a symmetric CSR, in row order.
void upper_pairs(const graph::Csr& csr, std::vector<int64_t>* src, std::vector<int64_t>* dst) {
  src->clear();
  dst->clear();
  for (int64_t u = 0; u < csr.num_rows; ++u) {
    for (int64_t e = csr.indptr[u]; e < csr.indptr[u + 1]; ++e) {
      if (csr.indices[e] > u) {
        src->push_back(u);
        dst->push_back(csr.indices[e]);
      }
    }
  }
}

}  // namespace

graph::Csr snapshot_union(int64_t num_nodes, const std::vector<graph::Csr>& snapshots) {
  graph::EdgeList edges;
  for (const graph::Csr& s : snapshots) {
    for (int64_t r = 0; r < s.num_rows; ++r) {
      for (int64_t e = s.indptr[r]; e < s.indptr[r + 1]; ++e) {
        edges.src.push_back(r);
        edges.dst.push_back(s.indices[e]);
      }
    }
  }
  graph::BuildOptions build;
  build.symmetrize = false;  // each snapshot is already stored as the graph wants it
  build.drop_self_loops = false;
  return graph::build_csr(num_nodes, std::move(edges), build);
}

graph::Graph generate_temporal_sbm(const TemporalSbmParams& p) {
  HALOGEN_USER_CHECK(p.steps >= 1, "temporal-sbm: --steps must be >= 1 (got %lld)",
                     static_cast<long long>(p.steps));
  HALOGEN_USER_CHECK(p.steps < (int64_t{1} << 31), "temporal-sbm: --steps must be < 2^31");
  HALOGEN_USER_CHECK(p.churn >= 0 && p.churn <= 1, "temporal-sbm: --churn must be in [0, 1] (got %g)",
                     p.churn);
  HALOGEN_USER_CHECK(p.drift >= 0 && p.drift <= 1, "temporal-sbm: --drift must be in [0, 1] (got %g)",
                     p.drift);
  HALOGEN_USER_CHECK(p.drift == 0 || p.sbm.classes > 1, "temporal-sbm: --drift needs at least 2 classes");
  HALOGEN_USER_CHECK(p.sbm.nodes < (int64_t{1} << 31), "temporal-sbm: --nodes must be < 2^31");
  // Memory planned before allocation: one CSR of about nodes x avg_degree stored edges per step, features
  // (and the per-step series) of every step.
  const int64_t edges_per_step =
      std::isfinite(p.sbm.avg_degree) ? static_cast<int64_t>(std::ceil(p.sbm.avg_degree * 0.5 * p.sbm.nodes)) : 0;
  const int64_t series_bytes = saturating_bytes(p.sbm.nodes, 4 * (1 + std::max<int64_t>(p.sbm.features, 0)));
  check_memory_fits(saturating_bytes(p.steps, io::csr_build_bytes(p.sbm.nodes, edges_per_step) / 2 + series_bytes),
                    strformat("temporal-sbm: --steps %lld --nodes %lld --avg-degree %g",
                              static_cast<long long>(p.steps), static_cast<long long>(p.sbm.nodes),
                              p.sbm.avg_degree));

  graph::Graph g = generate_sbm(p.sbm);
  g.name = "temporal-sbm";
  const int64_t n = g.num_nodes, k = p.sbm.classes;
  const uint64_t seed = p.sbm.seed;
  std::vector<int32_t> classes = g.labels;
  std::vector<std::vector<int64_t>> members(static_cast<size_t>(k));
  std::vector<int64_t> src, dst;

  g.snapshots.reserve(static_cast<size_t>(p.steps));
  g.snapshots.push_back(g.adjacency);
  log::Progress progress("temporal-sbm: snapshots", p.steps);
  for (int64_t t = 1; t < p.steps; ++t) {
    const uint32_t step = static_cast<uint32_t>(t);
    // Class drift.
    const uint64_t drift_stream = rng::stream_id(rng::kGraphGenerate, kDriftTag, step);
    for (int64_t v = 0; v < n && p.drift > 0; ++v) {
      const rng::Philox4 r = rng::bits(seed, drift_stream, static_cast<uint64_t>(v));
      if (static_cast<double>(r.v[0] >> 8) * (1.0 / 16777216.0) < p.drift) {
        const int32_t shift = 1 + static_cast<int32_t>(r.v[1] % static_cast<uint32_t>(k - 1));
        classes[v] = static_cast<int32_t>((classes[v] + shift) % k);
      }
    }
    for (auto& m : members) m.clear();
    for (int64_t v = 0; v < n; ++v) members[classes[v]].push_back(v);

    // Churn: keep each pair with probability 1 - churn; draw as many new pairs as were dropped.
    upper_pairs(g.snapshots.back(), &src, &dst);
    const uint64_t churn_stream = rng::stream_id(rng::kGraphGenerate, kChurnTag, step);
    graph::EdgeList edges;
    for (size_t i = 0; i < src.size(); ++i) {
      const uint64_t pair =
          static_cast<uint64_t>(src[i]) * static_cast<uint64_t>(n) + static_cast<uint64_t>(dst[i]);
      if (static_cast<double>(rng::uniform(seed, churn_stream, pair)) >= p.churn) {
        edges.src.push_back(src[i]);
        edges.dst.push_back(dst[i]);
      }
    }
    const int64_t dropped = static_cast<int64_t>(src.size()) - edges.size();
    const uint64_t new_stream = rng::stream_id(rng::kGraphGenerate, kNewEdgeTag, step);
    for (int64_t j = 0; j < dropped; ++j) {
      const rng::Philox4 r = rng::bits(seed, new_stream, static_cast<uint64_t>(j));
      const int64_t u =
          static_cast<int64_t>(((static_cast<uint64_t>(r.v[0]) << 32) | r.v[1]) % static_cast<uint64_t>(n));
      const bool inside = k == 1 || static_cast<double>(r.v[2] >> 8) * (1.0 / 16777216.0) < p.sbm.homophily;
      const int64_t other_class =
          (classes[u] + 1 +
           static_cast<int64_t>(r.v[3] % static_cast<uint32_t>(std::max<int64_t>(k - 1, 1)))) %
          k;
      const std::vector<int64_t>& pool = members[inside ? classes[u] : other_class];
      if (pool.empty()) continue;
      const rng::Philox4 r2 = rng::bits(seed, new_stream, static_cast<uint64_t>(j) | (uint64_t{1} << 63));
      const int64_t v = pool[((static_cast<uint64_t>(r2.v[0]) << 32) | r2.v[1]) % pool.size()];
      if (u == v) continue;
      edges.src.push_back(u);
      edges.dst.push_back(v);
    }
    graph::BuildOptions build;  // symmetrise, dedupe, drop self-loops
    g.snapshots.push_back(graph::build_csr(n, std::move(edges), build));
    progress.update(t + 1);
  }
  g.adjacency = snapshot_union(n, g.snapshots);
  g.labels = classes;
  return g;
}

}  // namespace halogen::io
