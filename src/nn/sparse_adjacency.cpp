#include "nn/sparse_adjacency.h"

#include "core/error.h"

namespace halogen::nn {

ValueLayout value_layout(const graph::LocalCsr& a) {
  if (!a.values.empty()) return ValueLayout::stored;
  const bool rows = !a.row_scale.empty(), cols = !a.col_scale.empty();
  if (rows && cols) return ValueLayout::scaled_both;
  if (rows) return ValueLayout::scaled_rows;
  if (cols) return ValueLayout::scaled_cols;
  // No values and no factors: all ones, or an empty matrix (whose values are stored, all none of them).
  return ValueLayout::none;
}

ValueLayout transposed(ValueLayout layout) {
  if (layout == ValueLayout::scaled_rows) return ValueLayout::scaled_cols;
  if (layout == ValueLayout::scaled_cols) return ValueLayout::scaled_rows;
  return layout;
}

ValueLayout value_layout_of(graph::Normalization normalization, bool weighted) {
  if (weighted || normalization == graph::Normalization::chebyshev) return ValueLayout::stored;
  if (normalization == graph::Normalization::gcn) return ValueLayout::scaled_both;
  if (normalization == graph::Normalization::mean) return ValueLayout::scaled_rows;
  return ValueLayout::none;
}

namespace {

// Whether a matrix of `layout` on `device` keeps nnz floats of values (the GPU always does: cuSPARSE).
bool keeps_values(ValueLayout layout, Device device) {
  return device != Device::cpu || layout == ValueLayout::stored;
}
bool has_row_scale(ValueLayout layout) {
  return layout == ValueLayout::scaled_both || layout == ValueLayout::scaled_rows;
}
bool has_col_scale(ValueLayout layout) {
  return layout == ValueLayout::scaled_both || layout == ValueLayout::scaled_cols;
}

}  // namespace

DeviceCsr::DeviceCsr(const graph::LocalCsr& host, Device device)
    : rows_(host.rows), cols_(host.cols), indptr_(host.rows + 1, device), indices_(host.nnz(), device) {
  HALOGEN_ASSERT(host.values.empty() || static_cast<int64_t>(host.values.size()) == host.nnz());
  HALOGEN_ASSERT(host.row_scale.empty() || static_cast<int64_t>(host.row_scale.size()) == host.rows);
  HALOGEN_ASSERT(host.col_scale.empty() || static_cast<int64_t>(host.col_scale.size()) == host.cols);
  indptr_.copy_from_host(host.indptr.data(), host.rows + 1);
  indices_.copy_from_host(host.indices.data(), host.nnz());
  const ValueLayout layout = value_layout(host);
  if (keeps_values(layout, device)) {
    values_ = Tensor(host.nnz(), device);
    if (layout == ValueLayout::stored) {
      values_.copy_from_host(host.values.data(), host.nnz());
    } else {
      const std::vector<float> values = graph::explicit_values(host);
      values_.copy_from_host(values.data(), host.nnz());
    }
    return;
  }
  if (has_row_scale(layout)) {
    row_scale_ = Buffer<float>(host.rows, device);
    row_scale_.copy_from_host(host.row_scale.data(), host.rows);
  }
  if (has_col_scale(layout)) {
    col_scale_ = Buffer<float>(host.cols, device);
    col_scale_.copy_from_host(host.col_scale.data(), host.cols);
  }
}

kernels::CsrView DeviceCsr::view(bool input_scaled) const {
  kernels::CsrView view{rows_,           cols_,          indices_.size(), indptr_.data(),
                        indices_.data(), values_.data(), indptr_.device()};
  if (values_.size() == 0) {  // implicit (or empty): the factors, if any
    view.values = nullptr;
    view.row_scale = row_scale_.size() > 0 ? row_scale_.data() : nullptr;
    view.col_scale = col_scale_.size() > 0 ? col_scale_.data() : nullptr;
  }
  if (input_scaled) {
    HALOGEN_ASSERT(view.col_scale != nullptr || cols_ == 0 || indices_.size() == 0,
                   "an input scaled by a column factor the matrix does not have");
    view.col_scale = nullptr;
  }
  return view;
}

int64_t DeviceCsr::bytes_for(int64_t rows, int64_t cols, int64_t nnz, ValueLayout layout, Device device) {
  constexpr int64_t kFloat = sizeof(float);
  int64_t bytes =
      (rows + 1) * static_cast<int64_t>(sizeof(int64_t)) + nnz * static_cast<int64_t>(sizeof(int32_t));
  if (keeps_values(layout, device)) return bytes + nnz * kFloat;
  if (has_row_scale(layout)) bytes += rows * kFloat;
  if (has_col_scale(layout)) bytes += cols * kFloat;
  return bytes;
}

}  // namespace halogen::nn
