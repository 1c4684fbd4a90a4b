#include "io/generate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/rng.h"
#include "graph/build.h"
#include "io/declared_sizes.h"

namespace halogen::io {

namespace {

// Stream tags for the second argument of rng::stream_id(kGraphGenerate, tag): what a number is drawn for.
enum GenerateTag : uint32_t {
  kSbmEdges = 1,
  kSbmClassMeans = 2,
  kRmatEdges = 3,
  kRmatLabels = 4,
  kRmatPermutation = 5,
  kSbmDegreeWeights = 6,
};

// Random split: each vertex independently train / valid / test by one uniform draw (sorted id lists).
void random_split(graph::Graph& g, double train_fraction, double valid_fraction, uint64_t seed) {
  HALOGEN_USER_CHECK(train_fraction >= 0 && valid_fraction >= 0 && train_fraction + valid_fraction <= 1,
                     "split fractions train %g + valid %g must be in [0, 1]", train_fraction, valid_fraction);
  const uint64_t stream = rng::stream_id(rng::kSplit);
  for (int64_t v = 0; v < g.num_nodes; ++v) {
    const double u = rng::uniform(seed, stream, static_cast<uint64_t>(v));
    if (u < train_fraction)
      g.train.push_back(v);
    else if (u < train_fraction + valid_fraction)
      g.valid.push_back(v);
    else
      g.test.push_back(v);
  }
}

// Rows of N(0,1) noise, plus `signal` * the class mean row for labeled vertices.
void make_features(graph::Graph& g, const std::vector<float>& class_means, double signal, uint64_t seed) {
  const int64_t width = g.num_features;
  g.features.assign(static_cast<size_t>(g.num_nodes * width), 0.0f);
  const uint64_t stream = rng::stream_id(rng::kFeatures);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < g.num_nodes; ++v) {
    float* row = g.features.data() + v * width;
    const float* mean = class_means.empty() ? nullptr : class_means.data() + g.labels[v] * width;
    for (int64_t f = 0; f < width; ++f) {
      row[f] = rng::normal(seed, stream, static_cast<uint64_t>(v * width + f));
      if (mean) row[f] += static_cast<float>(signal) * mean[f];
    }
  }
}

int64_t draws_of_vertex(double half_degree, uint64_t seed, uint64_t stream, int64_t v) {
  const int64_t whole = static_cast<int64_t>(half_degree);
  const double fraction = half_degree - static_cast<double>(whole);
  // Index space above all edge draws: word 3 of draw (v, 0) decides the fractional extra draw.
  const float u =
      static_cast<float>(rng::bits(seed, stream, static_cast<uint64_t>(v) << 20).v[3] >> 8) / 16777216.0f;
  return whole + (u < fraction ? 1 : 0);
}

}  // namespace

graph::Graph generate_sbm(const SbmParams& p) {
  HALOGEN_USER_CHECK(p.nodes >= 1, "sbm: --nodes must be >= 1 (got %lld)", static_cast<long long>(p.nodes));
  HALOGEN_USER_CHECK(p.classes >= 1 && p.classes <= p.nodes, "sbm: --classes must be in [1, nodes] (got %d)",
                     p.classes);
  HALOGEN_USER_CHECK(p.avg_degree >= 0 && p.avg_degree < 1e6,
                     "sbm: --avg-degree must be in [0, 1e6) (got %g)", p.avg_degree);
  HALOGEN_USER_CHECK(p.homophily >= 0 && p.homophily <= 1, "sbm: --homophily must be in [0, 1] (got %g)",
                     p.homophily);
  HALOGEN_USER_CHECK(p.features >= 0, "sbm: --features must be >= 0");
  HALOGEN_USER_CHECK(p.degree_exponent == 0 || p.degree_exponent > 2,
                     "sbm: --degree-exponent must be 0 (off) or > 2 (got %g)", p.degree_exponent);
  HALOGEN_USER_CHECK(p.classes > 1 || p.homophily == 1 || p.avg_degree == 0,
                     "sbm: with one class every edge is intra-class; use --homophily 1");
  // Memory planned before allocation: the CSR of nodes x avg_degree stored edges and the feature matrix.
  check_memory_fits(csr_build_bytes(p.nodes, static_cast<int64_t>(std::ceil(p.avg_degree * 0.5 * p.nodes))) +
                        saturating_bytes(p.nodes, saturating_bytes(p.features, 4)),
                    strformat("sbm: --nodes %lld --avg-degree %g --features %lld", static_cast<long long>(p.nodes),
                              p.avg_degree, static_cast<long long>(p.features)));

  graph::Graph g;
  g.name = "sbm";
  g.num_nodes = p.nodes;
  g.num_classes = p.classes;
  g.directed = false;
  const int64_t n = p.nodes, k = p.classes;
  // Class c holds vertices c, c + k, c + 2k, ...: equal sizes (within one), and a class member is cheap to
  // draw.
  g.labels.resize(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) g.labels[v] = static_cast<int32_t>(v % k);
  auto class_size = [&](int64_t c) { return (n - c + k - 1) / k; };

  // Degree-corrected variant: vertex weights theta_v ~ Pareto(exponent - 1), so degrees follow a power law
  // of that exponent; v draws in proportion to theta_v and is drawn as an endpoint in proportion to it.
  // Sums are sequential so the result does not depend on the thread count.
  const bool corrected = p.degree_exponent > 0;
  std::vector<double> theta, cumulative;  // cumulative: per class, running sums over its members in order
  double mean_theta = 1;
  if (corrected) {
    const uint64_t weight_stream = rng::stream_id(rng::kGraphGenerate, kSbmDegreeWeights);
    theta.resize(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t v = 0; v < n; ++v) {
      const double u =
          (static_cast<double>(rng::uniform_u64(p.seed, weight_stream, static_cast<uint64_t>(v)) >> 11) +
           0.5) *
          (1.0 / 9007199254740992.0);  // (0, 1)
      theta[v] = std::pow(u, -1.0 / (p.degree_exponent - 1.0));
    }
    double sum = 0;
    for (int64_t v = 0; v < n; ++v) sum += theta[v];
    mean_theta = sum / static_cast<double>(n);
    cumulative.resize(static_cast<size_t>(n));
    for (int64_t c = 0, at = 0; c < k; ++c) {
      double running = 0;
      for (int64_t v = c; v < n; v += k) cumulative[at++] = running += theta[v];
    }
  }
  auto class_begin = [&](int64_t c) { return c * (n / k) + std::min(c, n % k); };  // members of c before c

  // Edges: vertex v draws ~avg_degree/2 endpoints; symmetrising doubles them into ~avg_degree per vertex.
  const uint64_t stream = rng::stream_id(rng::kGraphGenerate, kSbmEdges);
  const double half_degree = p.avg_degree / 2;
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1, 0);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) {
    double draws = half_degree;
    // Capped at half a class, so that a hub's draws stay below the number of distinct partners.
    if (corrected)
      draws = std::min(half_degree * theta[v] / mean_theta, 0.5 * static_cast<double>(class_size(v % k)));
    offsets[v + 1] = draws_of_vertex(draws, p.seed, stream, v);
  }
  for (int64_t v = 0; v < n; ++v) offsets[v + 1] += offsets[v];
  graph::EdgeList edges;
  edges.src.resize(static_cast<size_t>(offsets[n]));
  edges.dst.resize(static_cast<size_t>(offsets[n]));
  log::Progress progress("sbm: drawing edges", n);
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t v = 0; v < n; ++v) {
    const int64_t c = v % k;
    for (int64_t j = 0; j < offsets[v + 1] - offsets[v]; ++j) {
      // Draw (v, j + 1) -- j + 1 since draw index 0's word 3 decided the vertex's draw count.
      const rng::Philox4 r =
          rng::bits(p.seed, stream, (static_cast<uint64_t>(v) << 20) + static_cast<uint64_t>(j + 1));
      const uint64_t wide = (static_cast<uint64_t>(r.v[1]) << 32) | r.v[2];
      const bool inside = static_cast<double>(r.v[0]) * (1.0 / 4294967296.0) < p.homophily;
      // The class: its own, or uniformly one of the k-1 others. Then a member: uniform, or by weight.
      const int64_t target_class =
          inside || k == 1 ? c : (c + 1 + static_cast<int64_t>(r.v[3] % static_cast<uint32_t>(k - 1))) % k;
      int64_t member;
      if (!corrected) {
        member = static_cast<int64_t>(wide % static_cast<uint64_t>(class_size(target_class)));
      } else {
        const auto begin = cumulative.begin() + class_begin(target_class);
        const auto end = begin + class_size(target_class);
        const double x = (static_cast<double>(wide >> 11) * (1.0 / 9007199254740992.0)) * *(end - 1);
        member = std::min<int64_t>(std::upper_bound(begin, end, x) - begin, class_size(target_class) - 1);
      }
      const int64_t target = target_class + k * member;
      edges.src[offsets[v] + j] = v;
      edges.dst[offsets[v] + j] = target;
    }
    if ((v & 65535) == 0) {
#pragma omp critical(halogen_sbm_progress)
      {
        done += 65536;
        progress.update(std::min(done, n));
      }
    }
  }
  progress.finish();
  std::vector<int64_t>().swap(offsets);
  g.adjacency = graph::build_csr(n, std::move(edges));

  std::vector<float> class_means;
  if (p.features > 0) {
    // One unit-norm random direction per class: `signal` is the distance of a class mean from the origin in
    // units of the per-coordinate noise, so the classes overlap (signal ~ 1) and neighbours must be averaged.
    const uint64_t mean_stream = rng::stream_id(rng::kGraphGenerate, kSbmClassMeans);
    class_means.resize(static_cast<size_t>(k * p.features));
    for (int64_t c = 0; c < k; ++c) {
      double norm = 0;
      for (int64_t f = 0; f < p.features; ++f) {
        const float x = rng::normal(p.seed, mean_stream, static_cast<uint64_t>(c * p.features + f));
        class_means[c * p.features + f] = x;
        norm += static_cast<double>(x) * x;
      }
      norm = std::sqrt(std::max(norm, 1e-30));
      for (int64_t f = 0; f < p.features; ++f) class_means[c * p.features + f] /= static_cast<float>(norm);
    }
    g.num_features = p.features;
    make_features(g, class_means, p.signal, p.seed);
  }
  random_split(g, p.train_fraction, p.valid_fraction, p.seed);
  return g;
}

namespace {

// A bijection of [0, 2^scale): odd multiplier and xor-shifts, all mod 2^scale (Graph500 permutes vertex ids
// so that high-degree vertices are not clustered at small ids).
uint64_t scramble(uint64_t x, int scale, uint64_t key0, uint64_t key1) {
  const uint64_t mask = scale >= 64 ? ~uint64_t{0} : ((uint64_t{1} << scale) - 1);
  const int shift = std::max(1, scale / 2);
  x = (x * (key0 | 1)) & mask;
  x ^= x >> shift;
  x = (x * (key1 | 1)) & mask;
  x ^= x >> shift;
  return x;
}

}  // namespace

graph::Graph generate_rmat(const RmatParams& p) {
  HALOGEN_USER_CHECK(p.scale >= 1 && p.scale <= 40, "rmat: --scale must be in [1, 40] (got %d)", p.scale);
  HALOGEN_USER_CHECK(p.edge_factor >= 1, "rmat: --edge-factor must be >= 1");
  HALOGEN_USER_CHECK(p.a > 0 && p.b >= 0 && p.c >= 0 && p.a + p.b + p.c < 1,
                     "rmat: probabilities a=%g b=%g c=%g must be >= 0 with a + b + c < 1", p.a, p.b, p.c);
  HALOGEN_USER_CHECK(p.features >= 0 && p.classes >= 0, "rmat: --features and --classes must be >= 0");
  check_memory_fits(csr_build_bytes(int64_t{1} << p.scale, saturating_bytes(p.edge_factor, int64_t{1} << p.scale)) +
                        saturating_bytes(int64_t{1} << p.scale, saturating_bytes(p.features, 4)),
                    strformat("rmat: --scale %d --edge-factor %lld --features %lld", p.scale,
                              static_cast<long long>(p.edge_factor), static_cast<long long>(p.features)));
  graph::Graph g;
  g.name = strformat("rmat-%d-%lld", p.scale, static_cast<long long>(p.edge_factor));
  g.num_nodes = int64_t{1} << p.scale;
  g.directed = false;
  const int64_t num_draws = p.edge_factor * g.num_nodes;
  const uint64_t stream = rng::stream_id(rng::kGraphGenerate, kRmatEdges);
  const uint64_t perm_stream = rng::stream_id(rng::kGraphGenerate, kRmatPermutation);
  const uint64_t key0 = rng::uniform_u64(p.seed, perm_stream, 0),
                 key1 = rng::uniform_u64(p.seed, perm_stream, 1);
  const int words_per_edge = (p.scale + 3) / 4;  // one 32-bit word per level, four per Philox draw
  const double ab = p.a + p.b, abc = p.a + p.b + p.c;

  graph::EdgeList edges;
  edges.src.resize(static_cast<size_t>(num_draws));
  edges.dst.resize(static_cast<size_t>(num_draws));
  log::Progress progress("rmat: drawing edges", num_draws);
  int64_t done = 0;
#pragma omp parallel for schedule(dynamic, 65536)
  for (int64_t e = 0; e < num_draws; ++e) {
    uint64_t row = 0, col = 0;
    rng::Philox4 r{};
    for (int level = 0; level < p.scale; ++level) {
      if (level % 4 == 0)
        r = rng::bits(p.seed, stream,
                      static_cast<uint64_t>(e) * words_per_edge + static_cast<uint64_t>(level / 4));
      const double u = static_cast<double>(r.v[level % 4]) * (1.0 / 4294967296.0);
      const uint64_t down = u >= ab, right = (u >= p.a && u < ab) || u >= abc;
      row = (row << 1) | down;
      col = (col << 1) | right;
    }
    edges.src[e] = static_cast<int64_t>(scramble(row, p.scale, key0, key1));
    edges.dst[e] = static_cast<int64_t>(scramble(col, p.scale, key0, key1));
    if ((e & ((1 << 20) - 1)) == 0) {
#pragma omp critical(halogen_rmat_progress)
      {
        done += 1 << 20;
        progress.update(std::min(done, num_draws));
      }
    }
  }
  progress.finish();
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges));

  g.num_classes = p.classes;
  if (p.classes > 0) {
    const uint64_t label_stream = rng::stream_id(rng::kGraphGenerate, kRmatLabels);
    g.labels.resize(static_cast<size_t>(g.num_nodes));
    for (int64_t v = 0; v < g.num_nodes; ++v) {
      g.labels[v] = static_cast<int32_t>(rng::uniform_u64(p.seed, label_stream, static_cast<uint64_t>(v)) %
                                         static_cast<uint64_t>(p.classes));
    }
  }
  if (p.features > 0) {
    g.num_features = p.features;
    make_features(g, {}, 0.0, p.seed);
  }
  if (p.classes > 0) random_split(g, 0.6, 0.2, p.seed);
  return g;
}

}  // namespace halogen::io
