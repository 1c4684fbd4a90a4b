#pragma once
// Helpers for the CPU kernel tests: random host matrices (optionally strided, with a sentinel in the padding
// so that a kernel touching it is caught), random CSR matrices with empty rows, and naive references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::kernels::test {

// Padding value: a kernel reading it produces NaN in the result; a kernel writing it changes it.
constexpr float kPadding = -12345.0f;

// A host matrix (rows, cols) stored with row stride `stride` >= cols; padding holds kPadding.
struct HostMatrix {
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<float> data;
  HostMatrix(int64_t rows_, int64_t cols_, int64_t padding = 0)
      : rows(rows_),
        cols(cols_),
        stride(cols_ + padding),
        data(static_cast<size_t>(std::max<int64_t>(rows_ * (cols_ + padding), 1)), kPadding) {}
  float& operator()(int64_t r, int64_t c) { return data[r * stride + c]; }
  float operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
  Matrix<float> view() { return Matrix<float>{data.data(), rows, cols, stride, Device::cpu}; }
  Matrix<const float> cview() const {
    return Matrix<const float>{data.data(), rows, cols, stride, Device::cpu};
  }
  void randomize(std::mt19937_64& gen, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) (*this)(r, c) = dist(gen);
  }
  // True when every padding element still holds kPadding.
  bool padding_intact() const {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = cols; c < stride; ++c)
        if (data[r * stride + c] != kPadding) return false;
    return true;
  }
};

// A host CSR matrix with sorted column indices per row.
struct HostCsr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  std::vector<float> values;
  CsrView view(bool with_values = true) const {
    return CsrView{rows,          cols,           static_cast<int64_t>(indices.size()),
                   indptr.data(), indices.data(), with_values ? values.data() : nullptr,
                   Device::cpu};
  }
};

// Random CSR: each row gets a degree in [0, 2 * avg_degree] (so some rows are empty), plus `empty_every`-th
// rows forced empty, and a few heavy rows (hubs) to exercise load balancing.
inline HostCsr random_csr(std::mt19937_64& gen, int64_t rows, int64_t cols, int avg_degree,
                          int empty_every = 7) {
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  std::uniform_int_distribution<int> degree_dist(0, 2 * avg_degree);
  std::uniform_int_distribution<int32_t> col_dist(0, static_cast<int32_t>(std::max<int64_t>(cols - 1, 0)));
  std::uniform_real_distribution<float> value_dist(-1.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r) {
    int degree = cols == 0 || (empty_every > 0 && r % empty_every == 3) ? 0 : degree_dist(gen);
    if (cols > 0 && r % 97 == 5)
      degree = static_cast<int>(std::min<int64_t>(cols, 40 * avg_degree + 1));  // hub
    std::vector<int32_t> row_cols;
    for (int k = 0; k < degree; ++k) row_cols.push_back(col_dist(gen));
    std::sort(row_cols.begin(), row_cols.end());  // duplicates kept: a multigraph is still a valid CSR
    for (int32_t c : row_cols) {
      a.indices.push_back(c);
      a.values.push_back(value_dist(gen));
    }
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  return a;
}

// out = A x or out += A x, in double, one nonzero at a time.
inline std::vector<double> naive_spmm(const HostCsr& a, bool with_values, const HostMatrix& x,
                                      const HostMatrix& out_before, bool accumulate) {
  std::vector<double> out(static_cast<size_t>(a.rows * x.cols), 0.0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < x.cols; ++c) {
      double sum = accumulate ? out_before(r, c) : 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        sum += (with_values ? a.values[k] : 1.0) * x(a.indices[k], c);
      out[r * x.cols + c] = sum;
    }
  return out;
}

}  // namespace halogen::kernels::test
