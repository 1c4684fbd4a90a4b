#pragma once
// A rank's view of its shard for training: the normalised adjacency of its owned rows, split by columns into
//   A_own  (n_own x n_own)   columns that are owned vertices        -> multiplies X[0, n_own)
//   A_halo (n_own x n_halo)  columns that are halo vertices         -> multiplies X[n_own, n_own + n_halo)
// and their explicit transposes for the backward pass (A_own^T: n_own x n_own, A_halo^T: n_halo x n_own).
// Host arrays only; nn/ copies them to the compute device.
//
// Normalisations (no communication: the shard carries the global degrees of owned and halo vertices):
//   gcn:  Â = D^-1/2 (A + I) D^-1/2, D = deg + 1 (Kipf & Welling); Â[i,j] = 1/sqrt((deg_i+1)(deg_j+1)),
//         Â[i,i] = 1/(deg_i+1). Edge weights are ignored (the stored degrees count edges).
//   mean: M[i,j] = 1/deg_i over the stored neighbours j != i (GraphSAGE mean aggregator); isolated rows are
//   0. chebyshev: L~ = 2L/lambda_max - I with L = I - D^-1/2 A D^-1/2 and lambda_max = 2 (PyG ChebConv's
//   default),
//         i.e. L~[i,j] = -1/sqrt(deg_i deg_j) for j != i, no diagonal. Edge weights are ignored.
//   sum:  S[i,j] = 1 for every stored neighbour j != i, no diagonal (GIN's sum aggregator; its (1 + eps) x_i
//         term is the layer's).
// A self-loop stored in the shard's CSR is skipped (gcn adds its own; mean excludes the vertex itself).
//
// Weighted (an EdgeWeighting passed; static shards only): the stored edge weights w_ij replace the 1s, and
// the degrees are weighted degrees d_i = sum_{j != i} w_ij (the caller supplies them: an owned row's is the
// sum of its stored weights, a halo vertex's comes from its owner):
//   gcn:  Â[i,j] = w_ij / sqrt((d_i+1)(d_j+1)), Â[i,i] = 1/(d_i+1) (self-loops of weight 1, PyG's gcn_norm);
//   mean: M[i,j] = w_ij / d_i (weighted mean; a row with d_i == 0 is 0);   sum: S[i,j] = w_ij.
//
// Values (issue #36, memory at scale): where an entry's value is a product of a per-row and a per-column
// factor it is not stored; the matrix holds the factors (LocalCsr::row_scale, col_scale) and `values` is
// empty:
//   gcn (unweighted):  row_scale = col_scale = dinv, dinv_v = 1/sqrt(deg_v + 1) (A_own: the owned vertices',
//                      A_halo's columns: the halo vertices'); the diagonal is dinv_i * dinv_i.
//   mean (unweighted): row_scale = 1/neighbours_i (0 for an isolated row), no col_scale.
//   sum (unweighted):  no values and no factors (all ones).
// Each factor is computed in double and rounded to float once, so an implicit value differs from the stored
// float of the same formula by a few units in the last place (gcn; mean's is the same float). Chebyshev and
// every weighted variant store their values. The transposes swap the two factors.
#include <cstdint>
#include <vector>

#include "graph/shard.h"

namespace halogen::graph {

enum class Normalization { gcn, mean, chebyshev, sum };

// Weighted degrees of a shard's vertices (see above): (n_own) and (n_halo).
struct EdgeWeighting {
  std::vector<double> degree_owned, degree_halo;
};

// Host CSR with float values and int32 local columns (the kernels' CsrView layout). The value of entry k in
// row r is values[k] when `values` is not empty (nnz floats), else
//   (row_scale.empty() ? 1 : row_scale[r]) * (col_scale.empty() ? 1 : col_scale[indices[k]])
// (the implicit form above; both empty: all ones).
struct LocalCsr {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> indptr{0};  // (rows+1)
  std::vector<int32_t> indices;    // (nnz), sorted within a row
  std::vector<float> values;       // (nnz), or empty: implicit values
  std::vector<float> row_scale;    // (rows) or empty; only read when `values` is empty
  std::vector<float> col_scale;    // (cols) or empty; only read when `values` is empty

  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

// The transpose (cols x rows), rows sorted; an implicit matrix's transpose is implicit with the factors
// swapped. O(nnz + rows + cols).
LocalCsr transpose(const LocalCsr& a);

// Every entry's value, stored or implicit (nnz floats, in CSR order): for tests and for a device whose kernel
// takes stored values (nn::DeviceCsr on the GPU). The implicit value is the float product of the two factors.
std::vector<float> explicit_values(const LocalCsr& a);

struct LocalGraph {
  int64_t num_owned = 0;
  int64_t num_halo = 0;
  LocalCsr a_own, a_halo;      // forward
  LocalCsr a_own_t, a_halo_t;  // backward; a_own_t is empty when a_own_symmetric
  // A_own equals its transpose, entry for entry: the stored owned block is symmetric ((r, c) is stored iff
  // (c, r) is, with the same weight when weighted; self-loops aside), checked on the entries in
  // O(nnz log(max degree)), and the normalisation is symmetric (gcn, sum, chebyshev: the degrees of r and c
  // enter the value symmetrically). The backward then multiplies by a_own itself and no copy is stored.
  // True for an undirected graph's shards.
  bool a_own_symmetric = false;
  const LocalCsr& own_transpose() const { return a_own_symmetric ? a_own : a_own_t; }
};

// Whether `normalization` of a symmetric owned block is symmetric (all but mean, whose rows are scaled by their
// own degree).
inline bool symmetric_normalization(Normalization normalization) { return normalization != Normalization::mean; }

// Builds the normalised, column-split local adjacency of `shard`'s static graph. Asserts the shard's internal
// consistency (sizes of indptr/indices/degrees; io::read_shard validated user files before).
// With `weighting` (non-null; shard.weight must hold one weight per stored edge), the weighted variant above.
LocalGraph build_local_graph(const Shard& shard, Normalization normalization,
                             const EdgeWeighting* weighting = nullptr);
// An owned row's weighted degree: the sum of its stored weights, self-loops excluded. (n_own)
std::vector<double> weighted_owned_degrees(const Shard& shard);
// The same for one snapshot of a shard with `num_owned` owned rows: columns [n_own, n_own + n_halo_t) are the
// snapshot's own (compact) halo, normalised with the snapshot's degrees.
LocalGraph build_local_graph(const ShardSnapshot& snapshot, int64_t num_owned, Normalization normalization);

}  // namespace halogen::graph
