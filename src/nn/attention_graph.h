#pragma once
// AttentionGraph: the edges GAT attends over on one rank, on the compute device. Rows are the n owned
// vertices (destinations), columns the n owned then h halo vertices (sources, in the halo plan's recv order,
// as the shard's local columns); every owned row has its stored neighbours plus exactly one self-loop (stored
// self-loops are dropped first: PyG GATConv's add_self_loops=True). Each row's columns are ascending. Edges are
// numbered by CSR position e in [0, nnz); per-edge, per-head tensors (nnz, K) are indexed by e.
//
//   a():      (n, n + h) CSR, values unused (nullptr)
//   a_t():    (n + h, n) its transpose (rows ascending within a column). GAT's fused ops keep no per-edge
//             tensor, so the transpose carries no edge ids: 8 bytes per edge for both (4 B column, 4 B row id).
//   row_gid(): (n) and col_gid(): (n + h) global vertex ids (attention dropout keys).
// Built once per model; the host copies are freed when the constructor returns.
#include <cstdint>

#include "core/buffer.h"
#include "graph/shard.h"
#include "kernels/ops.h"

namespace halogen::nn {

class AttentionGraph {
 public:
  AttentionGraph(const graph::Shard& shard, Device device);
  AttentionGraph(const AttentionGraph&) = delete;
  AttentionGraph& operator=(const AttentionGraph&) = delete;

  const kernels::CsrView& a() const { return a_; }
  const kernels::CsrView& a_t() const { return a_t_; }
  Span<const int64_t> row_gid() const { return {gid_.data(), num_owned_, gid_.device()}; }
  Span<const int64_t> col_gid() const { return {gid_.data(), num_owned_ + num_halo_, gid_.device()}; }
  int64_t num_owned() const { return num_owned_; }
  int64_t num_halo() const { return num_halo_; }
  int64_t num_edges() const { return a_.nnz; }

  // Edges of a shard whose CSR has `stored` entries of which `self_loops` are on the diagonal.
  static int64_t edges_for(int64_t num_owned, int64_t stored, int64_t self_loops = 0) {
    return stored - self_loops + num_owned;
  }
  // Bytes the constructor allocates for n owned, h halo vertices and `edges` edges (memory estimates).
  static int64_t bytes_for(int64_t num_owned, int64_t num_halo, int64_t edges);

 private:
  int64_t num_owned_ = 0, num_halo_ = 0;
  Buffer<int64_t> indptr_, t_indptr_, gid_;    // (n + 1), (n + h + 1), (n + h)
  Buffer<int32_t> indices_, t_indices_;  // (nnz) each
  kernels::CsrView a_, a_t_;
};

}  // namespace halogen::nn
