#pragma once
// Argument checks shared by the CPU kernels (programming errors -> HALOGEN_ASSERT). Internal to kernels/cpu.
#include <cstdint>

#include "core/buffer.h"
#include "core/error.h"

namespace halogen::kernels::cpu::detail {

// A view handed to a CPU kernel lives on the host and, for matrices, has a row stride that holds a row.
template <typename T>
inline void require_host(const Matrix<T>& m, const char* what) {
  HALOGEN_ASSERT(m.device == Device::cpu, "%s is a %s view, the CPU kernel needs host memory", what,
                 device_name(m.device));
  HALOGEN_ASSERT(m.rows >= 0 && m.cols >= 0, "%s has shape (%lld, %lld)", what, (long long)m.rows,
                 (long long)m.cols);
  HALOGEN_ASSERT(m.rows <= 1 || m.stride >= m.cols, "%s has stride %lld < cols %lld", what,
                 (long long)m.stride, (long long)m.cols);
  HALOGEN_ASSERT(m.size() == 0 || m.data != nullptr, "%s is (%lld, %lld) with no data", what,
                 (long long)m.rows, (long long)m.cols);
}

template <typename T>
inline void require_host(const Span<T>& s, const char* what) {
  HALOGEN_ASSERT(s.device == Device::cpu, "%s is a %s view, the CPU kernel needs host memory", what,
                 device_name(s.device));
  HALOGEN_ASSERT(s.size >= 0 && (s.size == 0 || s.data != nullptr), "%s has size %lld and data %p", what,
                 (long long)s.size, static_cast<const void*>(s.data));
}

template <typename A, typename B>
inline void require_same_shape(const Matrix<A>& a, const Matrix<B>& b, const char* what_a,
                               const char* what_b) {
  HALOGEN_ASSERT(a.rows == b.rows && a.cols == b.cols, "%s is (%lld, %lld) but %s is (%lld, %lld)", what_a,
                 (long long)a.rows, (long long)a.cols, what_b, (long long)b.rows, (long long)b.cols);
}

// Below this many elements an op runs on the calling thread: an OpenMP parallel region costs microseconds (and,
// with libgomp, futex system calls even for one thread), more than the whole op on small matrices (a temporal
// cell on a 20-vertex graph makes dozens of calls per step). Results do not depend on it (no op's arithmetic
// depends on the thread count).
constexpr int64_t kMinParallelElements = int64_t{1} << 15;

// body(i) for i in [0, n): on the OpenMP threads when `elements` (the op's size) reaches kMinParallelElements,
// else on the calling thread without entering the OpenMP runtime.
template <typename Body>
inline void parallel_for(int64_t n, int64_t elements, const Body& body) {
  if (elements < kMinParallelElements) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Rows are reduced in blocks of this many, each block serially, and the block sums are then added in block
// order: the result does not depend on the number of threads.
constexpr int64_t kReductionBlockRows = 1024;

}  // namespace halogen::kernels::cpu::detail
