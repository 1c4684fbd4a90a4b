#include "graph/local_graph.h"

#include <cmath>

#include "core/error.h"

namespace halogen::graph {

LocalCsr transpose(const LocalCsr& a) {
  LocalCsr t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.indptr.assign(a.cols + 1, 0);
  t.indices.resize(a.nnz());
  t.values.resize(a.nnz());
  for (int32_t c : a.indices) ++t.indptr[c + 1];
  for (int64_t c = 0; c < a.cols; ++c) t.indptr[c + 1] += t.indptr[c];
  std::vector<int64_t> next(t.indptr.begin(), t.indptr.end() - 1);
  // Rows of `a` visited in ascending order, so every row of the transpose comes out sorted.
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      const int64_t slot = next[a.indices[k]]++;
      t.indices[slot] = static_cast<int32_t>(r);
      t.values[slot] = a.values[k];
    }
  }
  return t;
}

namespace {

// The arrays of one stored adjacency (a shard's static graph or one of its snapshots), as build_local_graph reads
// them: owned rows' CSR in local columns, and the degrees of the owned and halo vertices.
struct StoredAdjacency {
  int64_t num_owned, num_halo;
  const std::vector<int64_t>& indptr;
  const std::vector<int32_t>& indices;
  const std::vector<int64_t>& degree_owned;
  const std::vector<int64_t>& degree_halo;
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

  auto degree_of = [&](int64_t local) {
    return local < n_own ? shard.degree_owned[local] : shard.degree_halo[local - n_own];
  };
  for (int64_t r = 0; r < n_own; ++r) {
    const int64_t begin = shard.indptr[r], end = shard.indptr[r + 1];
    const double deg_r = static_cast<double>(shard.degree_owned[r]);
    int64_t neighbours = 0;
    for (int64_t k = begin; k < end; ++k) neighbours += shard.indices[k] != r;
    bool diagonal_done = normalization != Normalization::gcn;
    for (int64_t k = begin; k < end; ++k) {
      const int32_t c = shard.indices[k];
      HALOGEN_ASSERT(c >= 0 && c < n_own + n_halo, "row %lld column %d", (long long)r, c);
      if (c == r) continue;
      // Columns are sorted and owned columns come first, so the diagonal goes in before the first column > r.
      if (!diagonal_done && c > r) {
        g.a_own.indices.push_back(static_cast<int32_t>(r));
        g.a_own.values.push_back(static_cast<float>(1.0 / (deg_r + 1.0)));
        diagonal_done = true;
      }
      float value;
      if (normalization == Normalization::gcn) {
        value = static_cast<float>(1.0 / std::sqrt((deg_r + 1.0) * (static_cast<double>(degree_of(c)) + 1.0)));
      } else if (normalization == Normalization::chebyshev) {
        value = static_cast<float>(-1.0 / std::sqrt(deg_r * static_cast<double>(degree_of(c))));
      } else {
        value = static_cast<float>(1.0 / static_cast<double>(neighbours));
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
      g.a_own.values.push_back(static_cast<float>(1.0 / (deg_r + 1.0)));
    }
    g.a_own.indptr.push_back(g.a_own.nnz());
    g.a_halo.indptr.push_back(g.a_halo.nnz());
  }
  g.a_own_t = transpose(g.a_own);
  g.a_halo_t = transpose(g.a_halo);
  return g;
}

}  // namespace

LocalGraph build_local_graph(const Shard& shard, Normalization normalization) {
  HALOGEN_ASSERT(shard.plan.num_halo() == shard.num_halo() || shard.plan.recv_offsets.empty());
  return build(StoredAdjacency{shard.num_owned(), shard.num_halo(), shard.indptr, shard.indices, shard.degree_owned,
                               shard.degree_halo},
               normalization);
}

LocalGraph build_local_graph(const ShardSnapshot& snapshot, int64_t num_owned, Normalization normalization) {
  HALOGEN_ASSERT(snapshot.plan.num_halo() == snapshot.num_halo() || snapshot.plan.recv_offsets.empty());
  return build(StoredAdjacency{num_owned, snapshot.num_halo(), snapshot.indptr, snapshot.indices,
                               snapshot.degree_owned, snapshot.degree_halo},
               normalization);
}

}  // namespace halogen::graph
