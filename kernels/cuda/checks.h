#pragma once
// Argument checks shared by the CUDA kernels (programming errors -> HALOGEN_ASSERT). Internal to kernels/cuda.
// Empty views are accepted whatever their device (a default-constructed view says Device::cpu).
#include <cstdint>

#include "core/buffer.h"
#include "core/error.h"

namespace halogen::kernels::cuda::detail {

template <typename T>
inline void require_device(const Matrix<T>& m, const char* what) {
  HALOGEN_ASSERT(m.rows >= 0 && m.cols >= 0, "%s has shape (%lld, %lld)", what, (long long)m.rows,
                 (long long)m.cols);
  if (m.size() == 0) return;
  HALOGEN_ASSERT(m.device == Device::cuda, "%s is a %s view, the CUDA kernel needs device memory", what,
                 device_name(m.device));
  HALOGEN_ASSERT(m.rows <= 1 || m.stride >= m.cols, "%s has stride %lld < cols %lld", what, (long long)m.stride,
                 (long long)m.cols);
  HALOGEN_ASSERT(m.data != nullptr, "%s is (%lld, %lld) with no data", what, (long long)m.rows, (long long)m.cols);
}

template <typename T>
inline void require_device(const Span<T>& s, const char* what) {
  HALOGEN_ASSERT(s.size >= 0, "%s has size %lld", what, (long long)s.size);
  if (s.size == 0) return;
  HALOGEN_ASSERT(s.device == Device::cuda, "%s is a %s view, the CUDA kernel needs device memory", what,
                 device_name(s.device));
  HALOGEN_ASSERT(s.data != nullptr, "%s has size %lld and no data", what, (long long)s.size);
}

template <typename A, typename B>
inline void require_same_shape(const Matrix<A>& a, const Matrix<B>& b, const char* what_a, const char* what_b) {
  HALOGEN_ASSERT(a.rows == b.rows && a.cols == b.cols, "%s is (%lld, %lld) but %s is (%lld, %lld)", what_a,
                 (long long)a.rows, (long long)a.cols, what_b, (long long)b.rows, (long long)b.cols);
}

// The row stride to use in index arithmetic: single-row views may leave stride at 0.
template <typename T>
inline int64_t row_stride(const Matrix<T>& m) {
  return m.stride > m.cols ? m.stride : m.cols;
}

}  // namespace halogen::kernels::cuda::detail
