#pragma once
// Memory. A Buffer<T> owns an array on the host or on a CUDA device; it is move-only (never shared, so no
// silent aliasing), and kernels take non-owning views (Span / Matrix) that carry the shape. Device memory is
// allocated through hooks that the CUDA backend installs (core includes no CUDA header); asking for device
// memory in a build or run without CUDA is a UserError.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace halogen {

enum class Device { cpu, cuda };
const char* device_name(Device device);

// Hooks for device memory, installed by the CUDA backend (kernels::device::initialise_device).
struct DeviceMemoryOps {
  void* (*allocate)(size_t bytes) = nullptr;
  void (*release)(void* pointer) = nullptr;
  void (*copy)(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) = nullptr;
  void (*fill_zero)(void* dst, size_t bytes) = nullptr;
};
void set_device_memory_ops(const DeviceMemoryOps& ops);
bool device_memory_available();
// When on, host buffers of 1 MiB or more are made resident at allocation (one write per page) instead of at
// their first use. `halogen train` and `bench epoch` turn it on: the trainer sizes its memory before epoch 1,
// and without this epoch 1 pays every buffer's page faults (and a run that does not fit fails inside it).
// Off by default: readers and converters (and the fuzzers) allocate from declared sizes they may not fill.
void set_host_prefault(bool on);

namespace detail {
void* allocate_bytes(size_t bytes, Device device);
void release_bytes(void* pointer, Device device, size_t bytes);
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void zero_bytes(void* dst, Device device, size_t bytes);
// Bytes currently allocated through Buffer on each device, and the peak since start (for memory reports).
int64_t bytes_in_use(Device device);
int64_t peak_bytes(Device device);
// The peak since the last start_peak_window(device) (which sets it to the bytes in use then): what one run
// of a trainer allocated in its loop, however large an earlier run in the same process (tests, Python) was.
void start_peak_window(Device device);
int64_t window_peak_bytes(Device device);
}  // namespace detail

// Non-owning 1-D view.
template <typename T>
struct Span {
  T* data = nullptr;
  int64_t size = 0;
  Device device = Device::cpu;
  T& operator[](int64_t i) const { return data[i]; }
  T* begin() const { return data; }
  T* end() const { return data + size; }
};

// Non-owning row-major 2-D view: element (r, c) at data[r * stride + c].
template <typename T>
struct Matrix {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  Device device = Device::cpu;
  T* row(int64_t r) const { return data + r * stride; }
  T& operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
  int64_t size() const { return rows * cols; }
  // Rows [begin, end) as a view.
  Matrix slice_rows(int64_t begin, int64_t end) const {
    return Matrix{data + begin * stride, end - begin, cols, stride, device};
  }
  // Read-only view of a writable matrix. A template enabled only for non-const T, so that Matrix<const T> has
  // no conversion to its own type (nvcc warns about such an operator: #554-D).
  template <typename U = T, typename = std::enable_if_t<std::is_same<U, T>::value && !std::is_const<U>::value>>
  operator Matrix<const U>() const {
    return Matrix<const U>{data, rows, cols, stride, device};
  }
};

// Owning, move-only array of `size` elements on one device, optionally shaped (rows x cols, row-major).
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(int64_t size, Device device = Device::cpu) : Buffer(size, 1, device) {}
  Buffer(int64_t rows, int64_t cols, Device device) : rows_(rows), cols_(cols), device_(device) {
    HALOGEN_ASSERT(rows >= 0 && cols >= 0);
    if (size() > 0) data_ = static_cast<T*>(detail::allocate_bytes(bytes(), device));
  }
  ~Buffer() { reset(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      rows_ = std::exchange(other.rows_, 0);
      cols_ = std::exchange(other.cols_, 0);
      device_ = other.device_;
    }
    return *this;
  }

  void reset() {
    if (data_) detail::release_bytes(data_, device_, bytes());
    data_ = nullptr;
    rows_ = cols_ = 0;
  }
  void zero() {
    if (data_) detail::zero_bytes(data_, device_, bytes());
  }
  // Copies all elements from `other` (same size; devices may differ).
  void copy_from(const Buffer& other) {
    HALOGEN_ASSERT(other.size() == size(), "%lld vs %lld", (long long)other.size(), (long long)size());
    if (size() > 0) detail::copy_bytes(data_, device_, other.data_, other.device_, bytes());
  }
  void copy_from_host(const T* src, int64_t count) {
    HALOGEN_ASSERT(count == size());
    if (count > 0) detail::copy_bytes(data_, device_, src, Device::cpu, bytes());
  }
  void copy_to_host(T* dst) const {
    if (size() > 0) detail::copy_bytes(dst, Device::cpu, data_, device_, bytes());
  }
  Buffer clone(Device device) const {
    Buffer out(rows_, cols_, device);
    out.copy_from(*this);
    return out;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  int64_t size() const { return rows_ * cols_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  size_t bytes() const { return static_cast<size_t>(size()) * sizeof(T); }
  Device device() const { return device_; }
  bool empty() const { return size() == 0; }
  // Host element access (asserting in debug builds that the buffer is on the host).
  T& operator[](int64_t i) { return data_[i]; }
  const T& operator[](int64_t i) const { return data_[i]; }

  Span<T> span() { return Span<T>{data_, size(), device_}; }
  Span<const T> span() const { return Span<const T>{data_, size(), device_}; }
  Matrix<T> matrix() { return Matrix<T>{data_, rows_, cols_, cols_, device_}; }
  Matrix<const T> matrix() const { return Matrix<const T>{data_, rows_, cols_, cols_, device_}; }

 private:
  T* data_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  Device device_ = Device::cpu;
};

using Tensor = Buffer<float>;

}  // namespace halogen
