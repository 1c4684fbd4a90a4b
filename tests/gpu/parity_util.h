#pragma once
// Helpers for the GPU parity tests: inputs on the host, the same inputs on the device, and back.
//
// Exactness by construction: sums in spmm, gemm, bias_backward and scatter_add_rows are compared bit for bit
// with the CPU. Their inputs are small dyadic rationals (k / 8 with |k| <= 16, CSR weights k / 4 with
// |k| <= 8): every value is at most 2 in magnitude, every product a multiple of 1/64 of magnitude <= 4, so
// every partial sum of fewer than 2^16 terms is a multiple of 1/64 below 2^18, which needs at most 24
// significant bits: exactly representable in float whatever the order of the additions. Any difference is
// therefore a wrong index, a missed or doubled term, not rounding.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "core/rng.h"
#include "kernels/ops.h"

namespace halogen::gpu_test {

// n values k / denominator with k uniform in [-range, range], a pure function of (seed, index).
inline std::vector<float> dyadic_values(int64_t n, uint64_t seed, int range = 16, float denominator = 8.0f) {
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = rng::uniform_u64(seed, rng::stream_id(rng::kBenchData, 99), static_cast<uint64_t>(i)) %
                       static_cast<uint64_t>(2 * range + 1);
    values[i] = (static_cast<float>(k) - static_cast<float>(range)) / denominator;
  }
  return values;
}

// n floats uniform in [lo, hi) (for ops compared with a tolerance).
inline std::vector<float> uniform_values(int64_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[i] = lo + (hi - lo) * rng::uniform(seed, rng::stream_id(rng::kBenchData, 98), static_cast<uint64_t>(i));
  return values;
}

template <typename T>
Buffer<T> to_device(const std::vector<T>& host) {
  Buffer<T> device(static_cast<int64_t>(host.size()), Device::cuda);
  device.copy_from_host(host.data(), static_cast<int64_t>(host.size()));
  return device;
}

template <typename T>
std::vector<T> to_host(const Buffer<T>& device) {
  std::vector<T> host(static_cast<size_t>(device.size()));
  device.copy_to_host(host.data());  // cudaMemcpy on the legacy stream: after the kernels queued before it
  return host;
}

// A (rows, cols) matrix with row stride `stride` >= cols, as one flat host array (padding filled too, so that
// a kernel writing into the padding is caught by comparing whole arrays).
struct HostMatrix {
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<float> data;
  Matrix<float> view() { return Matrix<float>{data.data(), rows, cols, stride, Device::cpu}; }
};

inline HostMatrix dyadic_matrix(int64_t rows, int64_t cols, int64_t stride, uint64_t seed) {
  HostMatrix m{rows, cols, stride, dyadic_values(rows * stride, seed)};
  return m;
}

// The device twin of a HostMatrix (same shape and stride, same contents).
struct DeviceMatrix {
  int64_t rows = 0, cols = 0, stride = 0;
  Buffer<float> buffer;
  explicit DeviceMatrix(const HostMatrix& host)
      : rows(host.rows), cols(host.cols), stride(host.stride), buffer(to_device(host.data)) {}
  Matrix<float> view() { return Matrix<float>{buffer.data(), rows, cols, stride, Device::cuda}; }
  std::vector<float> host() const { return to_host(buffer); }
};

// CSR with int64 row pointers and int32 columns (sorted within a row), dyadic weights k / 4.
// Every `empty_every`-th row (if > 0) is empty; other rows get a degree in [1, max_degree].
struct HostCsr {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr{0};
  std::vector<int32_t> indices;
  std::vector<float> values;
  kernels::CsrView view(bool pattern = false) const {
    return kernels::CsrView{rows, cols, static_cast<int64_t>(indices.size()), indptr.data(), indices.data(),
                   pattern ? nullptr : values.data(), Device::cpu};
  }
};

inline HostCsr random_csr(int64_t rows, int64_t cols, int max_degree, int empty_every, uint64_t seed) {
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  const uint64_t stream = rng::stream_id(rng::kBenchData, 97);
  uint64_t counter = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const bool empty = cols == 0 || (empty_every > 0 && r % empty_every == 0);
    const int degree = empty ? 0 : 1 + static_cast<int>(rng::uniform_u64(seed, stream, counter++) % max_degree);
    std::vector<int32_t> row;
    for (int k = 0; k < degree; ++k)
      row.push_back(static_cast<int32_t>(rng::uniform_u64(seed, stream, counter++) % static_cast<uint64_t>(cols)));
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
    for (int32_t c : row) {
      a.indices.push_back(c);
      const int k = static_cast<int>(rng::uniform_u64(seed, stream, counter++) % 17) - 8;
      a.values.push_back(static_cast<float>(k) / 4.0f);
    }
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  return a;
}

struct DeviceCsr {
  Buffer<int64_t> indptr;
  Buffer<int32_t> indices;
  Buffer<float> values;
  int64_t rows = 0, cols = 0;
  explicit DeviceCsr(const HostCsr& host)
      : indptr(to_device(host.indptr)), indices(to_device(host.indices)), values(to_device(host.values)),
        rows(host.rows), cols(host.cols) {}
  kernels::CsrView view(bool pattern = false) const {
    return kernels::CsrView{rows, cols, indices.size(), indptr.data(), indices.data(), pattern ? nullptr : values.data(),
                   Device::cuda};
  }
};

}  // namespace halogen::gpu_test
