#include "graph/local_graph.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/error.h"

namespace halogen::graph {

LocalCsr transpose(const LocalCsr& a) {
  LocalCsr t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.indptr.assign(a.cols + 1, 0);
  t.indices.resize(a.nnz());
  const bool stored = !a.values.empty();
  if (stored) t.values.resize(a.nnz());
  t.row_scale = a.col_scale;
  t.col_scale = a.row_scale;
  for (int32_t c : a.indices) ++t.indptr[c + 1];
  for (int64_t c = 0; c < a.cols; ++c) t.indptr[c + 1] += t.indptr[c];
  std::vector<int64_t> next(t.indptr.begin(), t.indptr.end() - 1);
  // Rows of `a` visited in ascending order, so every row of the transpose comes out sorted.
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      const int64_t slot = next[a.indices[k]]++;
      t.indices[slot] = static_cast<int32_t>(r);
      if (stored) t.values[slot] = a.values[k];
    }
  }
  return t;
}

std::vector<float> explicit_values(const LocalCsr& a) {
  if (!a.values.empty()) return a.values;
  HALOGEN_ASSERT(a.row_scale.empty() || static_cast<int64_t>(a.row_scale.size()) == a.rows);
  HALOGEN_ASSERT(a.col_scale.empty() || static_cast<int64_t>(a.col_scale.size()) == a.cols);
  std::vector<float> values(static_cast<size_t>(a.nnz()));
  for (int64_t r = 0; r < a.rows; ++r) {
    const float row = a.row_scale.empty() ? 1.0f : a.row_scale[r];
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
      values[k] = a.col_scale.empty() ? row : row * a.col_scale[a.indices[k]];
  }
  return values;
}

namespace {

// Whether the owned block (columns < n_own; self-loops aside) is symmetric, with equal weights both ways when
// `weight` is given (LocalGraph::a_own_symmetric). O(nnz log(max degree)), no memory. Rows are checked in
// parallel (each entry's lookup is a cache miss at random: on RMAT-22 this was half of the start-up).
bool block_symmetric(int64_t n_own, const std::vector<int64_t>& indptr, const std::vector<int32_t>& indices,
                     const std::vector<float>* weight) {
  std::atomic<bool> symmetric{true};
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t r = 0; r < n_own; ++r) {
    if (!symmetric.load(std::memory_order_relaxed)) continue;  // an asymmetric entry was found: finish fast
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) {
      const int32_t c = indices[k];
      if (c == r || c >= n_own) continue;
      const auto begin = indices.begin() + indptr[c], end = indices.begin() + indptr[c + 1];
      const auto found = std::lower_bound(begin, end, static_cast<int32_t>(r));
      if (found == end || *found != r || (weight != nullptr && (*weight)[found - indices.begin()] != (*weight)[k])) {
        symmetric.store(false, std::memory_order_relaxed);
        break;
      }
    }
  }
  return symmetric.load();
}

// The arrays of one stored adjacency (a shard's static graph or one of its snapshots), as build_local_graph reads
// them: owned rows' CSR in local columns, and the degrees of the owned and halo vertices.
struct StoredAdjacency {
  int64_t num_owned, num_halo;
  const std::vector<int64_t>& indptr;
  const std::vector<int32_t>& indices;
  const std::vector<int64_t>& degree_owned;
  const std::vector<int64_t>& degree_halo;
  const std::vector<float>* weight = nullptr;  // (nnz) with a weighting, else nullptr (all ones)
  const EdgeWeighting* weighting = nullptr;    // weighted degrees, else the stored counts
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

LocalGraph build(const StoredAdjacency& shard, Normalization normalization) {
  const int64_t n_own = shard.num_owned, n_halo = shard.num_halo;
  HALOGEN_ASSERT(static_cast<int64_t>(shard.indptr.size()) == n_own + 1);
  HALOGEN_ASSERT(shard.indptr.back() == shard.nnz());
  HALOGEN_ASSERT(static_cast<int64_t>(shard.degree_owned.size()) == n_own);
  HALOGEN_ASSERT(static_cast<int64_t>(shard.degree_halo.size()) == n_halo);

  LocalGraph g;
  g.num_owned = n_own;
  g.num_halo = n_halo;
  g.a_own.rows = g.a_halo.rows = n_own;
  g.a_own.cols = n_own;
  g.a_halo.cols = n_halo;
  g.a_own.indptr.assign(1, 0);
  g.a_halo.indptr.assign(1, 0);
  g.a_own.indptr.reserve(n_own + 1);
  g.a_halo.indptr.reserve(n_own + 1);

  const EdgeWeighting* weighting = shard.weighting;
  HALOGEN_ASSERT(!weighting || (shard.weight && static_cast<int64_t>(shard.weight->size()) == shard.nnz() &&
                                static_cast<int64_t>(weighting->degree_owned.size()) == n_own &&
                                static_cast<int64_t>(weighting->degree_halo.size()) == n_halo));
  auto degree_of = [&](int64_t local) -> double {
    if (weighting)
      return local < n_own ? weighting->degree_owned[local] : weighting->degree_halo[local - n_own];
    return static_cast<double>(local < n_own ? shard.degree_owned[local] : shard.degree_halo[local - n_own]);
  };
  auto weight_of = [&](int64_t k) -> double { return weighting ? (*shard.weight)[k] : 1.0; };
  // Unweighted gcn, mean and sum: values implicit (the factors below), nothing pushed per entry.
  const bool implicit = !weighting && normalization != Normalization::chebyshev;
  if (implicit && normalization == Normalization::gcn) {
    auto dinv = [](int64_t degree) {
      return static_cast<float>(1.0 / std::sqrt(static_cast<double>(degree) + 1.0));
    };
    std::vector<float> own(static_cast<size_t>(n_own)), halo(static_cast<size_t>(n_halo));
    for (int64_t v = 0; v < n_own; ++v) own[v] = dinv(shard.degree_owned[v]);
    for (int64_t v = 0; v < n_halo; ++v) halo[v] = dinv(shard.degree_halo[v]);
    g.a_own.row_scale = own;
    g.a_own.col_scale = own;
    g.a_halo.row_scale = std::move(own);
    g.a_halo.col_scale = std::move(halo);
  } else if (implicit && normalization == Normalization::mean) {
    g.a_own.row_scale.resize(static_cast<size_t>(n_own));
  }
  for (int64_t r = 0; r < n_own; ++r) {
    const int64_t begin = shard.indptr[r], end = shard.indptr[r + 1];
    const double deg_r = degree_of(r);
    // The mean's denominator: the stored neighbours (weighted: their weights), self-loop excluded.
    double neighbours = 0;
    for (int64_t k = begin; k < end; ++k)
      if (shard.indices[k] != r) neighbours += weight_of(k);
    bool diagonal_done = normalization != Normalization::gcn;
    for (int64_t k = begin; k < end; ++k) {
      const int32_t c = shard.indices[k];
      HALOGEN_ASSERT(c >= 0 && c < n_own + n_halo, "row %lld column %d", (long long)r, c);
      if (c == r) continue;
      // Columns are sorted and owned columns come first, so the diagonal goes in before the first column > r.
      if (!diagonal_done && c > r) {
        g.a_own.indices.push_back(static_cast<int32_t>(r));
        if (!implicit) g.a_own.values.push_back(static_cast<float>(1.0 / (deg_r + 1.0)));
        diagonal_done = true;
      }
      if (implicit) {
        if (c < n_own)
          g.a_own.indices.push_back(c);
        else
          g.a_halo.indices.push_back(static_cast<int32_t>(c - n_own));
        continue;
      }
      float value;
      if (normalization == Normalization::gcn) {
        value = static_cast<float>(weight_of(k) / std::sqrt((deg_r + 1.0) * (degree_of(c) + 1.0)));
      } else if (normalization == Normalization::chebyshev) {
        value = static_cast<float>(-1.0 / std::sqrt(deg_r * degree_of(c)));
      } else if (normalization == Normalization::sum) {
        value = static_cast<float>(weight_of(k));
      } else {
        value = neighbours > 0 ? static_cast<float>(weight_of(k) / neighbours) : 0.0f;
      }
      if (c < n_own) {
        g.a_own.indices.push_back(c);
        g.a_own.values.push_back(value);
      } else {
        g.a_halo.indices.push_back(static_cast<int32_t>(c - n_own));
        g.a_halo.values.push_back(value);
      }
    }
    if (!diagonal_done) {
      g.a_own.indices.push_back(static_cast<int32_t>(r));
      if (!implicit) g.a_own.values.push_back(static_cast<float>(1.0 / (deg_r + 1.0)));
    }
    if (implicit && normalization == Normalization::mean)  // the stored mean's 1/neighbours, as one float
      g.a_own.row_scale[r] = neighbours > 0 ? static_cast<float>(1.0 / neighbours) : 0.0f;
    g.a_own.indptr.push_back(g.a_own.nnz());
    g.a_halo.indptr.push_back(g.a_halo.nnz());
  }
  if (implicit && normalization == Normalization::mean) g.a_halo.row_scale = g.a_own.row_scale;
  // Implicit gcn values are symmetric on a symmetric structure (row_scale == col_scale on A_own), sum's too.
  g.a_own_symmetric = symmetric_normalization(normalization) &&
                      block_symmetric(n_own, shard.indptr, shard.indices, weighting ? shard.weight : nullptr);
  if (!g.a_own_symmetric) g.a_own_t = transpose(g.a_own);
  g.a_halo_t = transpose(g.a_halo);
  return g;
}

}  // namespace

LocalGraph build_local_graph(const Shard& shard, Normalization normalization,
                             const EdgeWeighting* weighting) {
  HALOGEN_ASSERT(shard.plan.num_halo() == shard.num_halo() || shard.plan.recv_offsets.empty());
  HALOGEN_ASSERT(normalization != Normalization::chebyshev || !weighting, "chebyshev ignores edge weights");
  return build(
      StoredAdjacency{shard.num_owned(), shard.num_halo(), shard.indptr, shard.indices, shard.degree_owned,
                      shard.degree_halo, weighting ? &shard.weight : nullptr, weighting},
      normalization);
}

std::vector<double> weighted_owned_degrees(const Shard& shard) {
  HALOGEN_ASSERT(static_cast<int64_t>(shard.weight.size()) == shard.nnz());
  std::vector<double> degree(shard.num_owned(), 0.0);
  for (int64_t r = 0; r < shard.num_owned(); ++r)
    for (int64_t k = shard.indptr[r]; k < shard.indptr[r + 1]; ++k)
      if (shard.indices[k] != r) degree[r] += shard.weight[k];
  return degree;
}

LocalGraph build_local_graph(const ShardSnapshot& snapshot, int64_t num_owned, Normalization normalization) {
  HALOGEN_ASSERT(snapshot.plan.num_halo() == snapshot.num_halo() || snapshot.plan.recv_offsets.empty());
  return build(StoredAdjacency{num_owned, snapshot.num_halo(), snapshot.indptr, snapshot.indices,
                               snapshot.degree_owned, snapshot.degree_halo},
               normalization);
}

}  // namespace halogen::graph
