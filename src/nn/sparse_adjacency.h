#pragma once
// DeviceCsr: one CSR matrix of graph/local_graph.h (A_own, A_halo or a transpose) on the compute device, as arrays
// in Buffers with a kernels::CsrView accessor. The storage of nn::DistributedAdjacency; built once per model.
//
// Values: a matrix with stored values keeps them (nnz floats). An implicit one (graph::LocalCsr with empty
// `values`: unweighted gcn, mean, sum) keeps on the CPU only its row and column factors (rows and cols
// floats, or none), which the CPU spmm applies; on the GPU, where cuSPARSE takes stored values, the values
// are materialised (graph::explicit_values) and uploaded, nnz floats as before.
#include "core/buffer.h"
#include "graph/local_graph.h"
#include "kernels/ops.h"

namespace halogen::nn {

// How a matrix's values are held on the host (graph::LocalCsr): stored per entry, or implicit with a row and
// a column factor, a row factor only, a column factor only (the transpose of a row-scaled matrix), or none
// (all ones).
enum class ValueLayout { stored, scaled_both, scaled_rows, scaled_cols, none };

// The layout of `a` (stored when it has values; an empty implicit matrix by its factors).
ValueLayout value_layout(const graph::LocalCsr& a);
// The layout of the transpose of a matrix of layout `layout` (the factors swap).
ValueLayout transposed(ValueLayout layout);
// The layout graph::build_local_graph gives A_own and A_halo for `normalization` (weighted: with an
// EdgeWeighting): scaled_both (gcn), scaled_rows (mean), none (sum), stored (chebyshev, every weighted one).
ValueLayout value_layout_of(graph::Normalization normalization, bool weighted);

// One CSR matrix on a device.
class DeviceCsr {
 public:
  DeviceCsr() = default;
  DeviceCsr(const graph::LocalCsr& host, Device device);
  // `input_scaled`: without the column factor (the caller has scaled x's rows by it: kernels::scale_rows), which
  // the matrix must have; the same product, bit for bit, without a factor gathered per nonzero.
  kernels::CsrView view(bool input_scaled = false) const;
  // The column factor (cols floats; empty when there is none, e.g. stored values).
  Span<const float> col_scale() const { return Span<const float>{col_scale_.data(), col_scale_.size(), col_scale_.device()}; }
  bool row_scaled() const { return row_scale_.size() > 0; }
  int64_t rows() const { return rows_; }
  int64_t nnz() const { return indices_.size(); }
  // Bytes a DeviceCsr of this shape allocates on `device` for a host matrix of layout `layout` (memory
  // estimates): indptr and indices, then nnz floats of values (stored, and every layout on the GPU) or the
  // factors (CPU: rows floats for a row factor, cols for a column factor).
  static int64_t bytes_for(int64_t rows, int64_t cols, int64_t nnz, ValueLayout layout, Device device);

 private:
  int64_t rows_ = 0, cols_ = 0;
  Buffer<int64_t> indptr_;
  Buffer<int32_t> indices_;
  Tensor values_;                        // (nnz), or empty: implicit (CPU only)
  Buffer<float> row_scale_, col_scale_;  // (rows), (cols) or empty
};

}  // namespace halogen::nn
