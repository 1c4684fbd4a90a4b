#include "partition/metis_memory.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/rng.h"

namespace halogen::partition {

int32_t metis_levels(int64_t num_nodes, int32_t num_parts) {
  const double log2_parts = std::max(1.0, std::floor(std::log2(std::max(num_parts, 2))));
  const double coarsen_to = std::max(static_cast<double>(num_nodes) / (20.0 * log2_parts), 30.0 * num_parts);
  const double ratio = static_cast<double>(num_nodes) / coarsen_to;
  // ceil(log2(ratio)) halvings plus the input, the coarsest graph and one level of slack: measured 8 graphs
  // for N = 1M, P = 8 unweighted (SBM, RMAT), 9 for a weighted sparsified RMAT (matching is slower).
  return 3 + static_cast<int32_t>(std::ceil(std::log2(std::max(ratio, 1.0))));
}

int64_t estimate_metis_bytes(int64_t num_nodes, int64_t num_entries, int32_t num_parts) {
  return int64_t{8} * num_entries * metis_levels(num_nodes, num_parts) + int64_t{64} * num_nodes;
}

namespace {

constexpr uint64_t kSparsifyStream = 0x7370617273696679ull;  // "sparsify"

int64_t degree(const SymmetricGraph& g, int64_t u) {
  return g.xadj[u + 1] - g.xadj[u];
}

// Probability that the edge {u, v} is kept for keep-degree k.
double keep_probability(int64_t min_degree, double k) {
  return min_degree <= k ? 1.0 : k / static_cast<double>(min_degree);
}

bool kept(uint64_t seed, int64_t u, int64_t v, double probability) {
  if (probability >= 1.0) return true;
  const uint64_t a = static_cast<uint64_t>(std::min(u, v)), b = static_cast<uint64_t>(std::max(u, v));
  const uint64_t draw = rng::uniform_u64(seed, kSparsifyStream, (a << 32) | b);
  return static_cast<double>(draw >> 11) * 0x1.0p-53 < probability;
}

}  // namespace

SymmetricGraph sparsify(const SymmetricGraph& g, int64_t target_entries, uint64_t seed, double* keep_degree) {
  const int64_t n = g.num_nodes();
  if (g.num_entries() <= target_entries) {
    if (keep_degree) *keep_degree = std::numeric_limits<double>::infinity();
    return g;
  }
  // Expected entries kept for keep-degree k: sum over entries of min(1, k / min-degree), evaluated from a
  // histogram of min-degrees; k by bisection (the count grows with k).
  int64_t max_degree = 0;
  for (int64_t u = 0; u < n; ++u) max_degree = std::max(max_degree, degree(g, u));
  std::vector<int64_t> histogram(max_degree + 1, 0);  // [m] = entries whose endpoints' smaller degree is m
  for (int64_t u = 0; u < n; ++u)
    for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; ++e)
      ++histogram[std::min(degree(g, u), degree(g, g.adjncy[e]))];
  auto expected = [&](double k) {
    double total = 0;
    for (int64_t m = 1; m <= max_degree; ++m)
      if (histogram[m] != 0) total += static_cast<double>(histogram[m]) * keep_probability(m, k);
    return total;
  };
  double low = 0.5, high = static_cast<double>(max_degree);
  for (int i = 0; i < 60 && high - low > 1e-3; ++i) {
    const double mid = 0.5 * (low + high);
    (expected(mid) > static_cast<double>(target_entries) ? high : low) = mid;
  }
  const double k = low;
  if (keep_degree) *keep_degree = k;

  SymmetricGraph out;
  out.xadj.assign(n + 1, 0);
  std::vector<int32_t> length(n, 0);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t u = 0; u < n; ++u) {
    int32_t count = 0;
    for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; ++e) {
      const int64_t v = g.adjncy[e];
      count += kept(seed, u, v, keep_probability(std::min(degree(g, u), degree(g, v)), k));
    }
    length[u] = count;
  }
  for (int64_t u = 0; u < n; ++u) out.xadj[u + 1] = out.xadj[u] + length[u];
  length = {};
  out.adjncy.resize(out.xadj[n]);
  out.adjwgt.resize(out.xadj[n]);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t u = 0; u < n; ++u) {
    int64_t at = out.xadj[u];
    for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; ++e) {
      const int64_t v = g.adjncy[e];
      const double p = keep_probability(std::min(degree(g, u), degree(g, v)), k);
      if (!kept(seed, u, v, p)) continue;
      const double weight = (g.adjwgt.empty() ? 1.0 : g.adjwgt[e]) / p;
      out.adjncy[at] = static_cast<int32_t>(v);
      out.adjwgt[at] = static_cast<int32_t>(std::clamp<double>(std::llround(weight), 1.0, 1 << 24));
      ++at;
    }
  }
  return out;
}

int64_t cut_weight(const SymmetricGraph& g, const std::vector<int32_t>& part_of) {
  int64_t cut = 0;
  const int64_t n = g.num_nodes();
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : cut)
  for (int64_t u = 0; u < n; ++u)
    for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; ++e)
      if (part_of[g.adjncy[e]] != part_of[u]) cut += g.adjwgt.empty() ? 1 : g.adjwgt[e];
  return cut / 2;
}

int64_t refine_greedy(const SymmetricGraph& g, const std::vector<int32_t>& vwgt, int32_t ncon,
                      const std::vector<int64_t>& max_load, int32_t num_parts, std::vector<int32_t>& part_of,
                      int32_t max_passes) {
  const int64_t n = g.num_nodes();
  HALOGEN_ASSERT(static_cast<int64_t>(part_of.size()) == n, "part_of has %zu entries for %lld vertices",
                 part_of.size(), static_cast<long long>(n));
  HALOGEN_ASSERT(vwgt.empty() ? ncon == 1 : static_cast<int64_t>(vwgt.size()) == n * ncon,
                 "vwgt has %zu entries for %lld vertices x %d constraints", vwgt.size(),
                 static_cast<long long>(n), ncon);
  auto weight_of = [&](int64_t v, int32_t c) -> int64_t { return vwgt.empty() ? 1 : vwgt[v * ncon + c]; };
  std::vector<int64_t> load(static_cast<size_t>(num_parts) * ncon, 0);
  for (int64_t v = 0; v < n; ++v)
    for (int32_t c = 0; c < ncon; ++c) load[part_of[v] * ncon + c] += weight_of(v, c);

  std::vector<int64_t> connection(num_parts, 0);
  std::vector<int32_t> touched;
  int64_t removed = 0;
  for (int32_t pass = 0; pass < max_passes; ++pass) {
    int64_t moves = 0;
    for (int64_t u = 0; u < n; ++u) {
      const int32_t from = part_of[u];
      touched.clear();
      for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; ++e) {
        const int32_t q = part_of[g.adjncy[e]];
        if (connection[q] == 0) touched.push_back(q);
        connection[q] += g.adjwgt.empty() ? 1 : g.adjwgt[e];
      }
      int32_t best = from;
      int64_t best_gain = 0;
      for (int32_t q : touched) {
        const int64_t gain = connection[q] - connection[from];
        if (q == from || gain < best_gain || gain <= 0 || (gain == best_gain && q > best)) continue;
        bool fits = true;
        for (int32_t c = 0; c < ncon && fits; ++c)
          fits = load[q * ncon + c] + weight_of(u, c) <= max_load[q * ncon + c];
        if (fits) {
          best = q;
          best_gain = gain;
        }
      }
      for (int32_t q : touched) connection[q] = 0;
      if (best == from) continue;
      for (int32_t c = 0; c < ncon; ++c) {
        load[from * ncon + c] -= weight_of(u, c);
        load[best * ncon + c] += weight_of(u, c);
      }
      part_of[u] = best;
      removed += best_gain;
      ++moves;
    }
    if (moves == 0) break;
  }
  return removed;
}

}  // namespace halogen::partition
