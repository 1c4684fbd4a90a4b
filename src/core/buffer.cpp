#include "core/buffer.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace halogen {
namespace {
DeviceMemoryOps g_device_ops;
std::atomic<int64_t> g_in_use[2];
std::atomic<int64_t> g_peak[2];
std::atomic<int64_t> g_window_peak[2];  // peak since start_peak_window (a trainer's loop), not since start
std::atomic<bool> g_host_prefault{false};

int device_index(Device device) { return device == Device::cpu ? 0 : 1; }

// 64-byte alignment keeps rows vector-aligned.
constexpr size_t kHostAlign = 64;
// With set_host_prefault on, host buffers of at least this size are touched page by page at allocation.
constexpr size_t kPrefaultBytes = size_t{1} << 20, kPageBytes = 4096;

void account(Device device, int64_t delta) {
  const int d = device_index(device);
  const int64_t now = (g_in_use[d] += delta);
  int64_t peak = g_peak[d].load();
  while (now > peak && !g_peak[d].compare_exchange_weak(peak, now)) {
  }
  int64_t window = g_window_peak[d].load();
  while (now > window && !g_window_peak[d].compare_exchange_weak(window, now)) {
  }
}
}  // namespace

const char* device_name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

void set_device_memory_ops(const DeviceMemoryOps& ops) { g_device_ops = ops; }
bool device_memory_available() { return g_device_ops.allocate != nullptr; }
void set_host_prefault(bool on) { g_host_prefault.store(on); }

namespace detail {

void* allocate_bytes(size_t bytes, Device device) {
  void* pointer = nullptr;
  if (device == Device::cuda) {
    if (!g_device_ops.allocate) throw UserError("CUDA memory requested, but this run has no CUDA backend");
    pointer = g_device_ops.allocate(bytes);
  } else {
    const size_t rounded = (bytes + kHostAlign - 1) / kHostAlign * kHostAlign;
    pointer = std::aligned_alloc(kHostAlign, rounded);
    if (!pointer) throw std::bad_alloc();
    // set_host_prefault: GCN on a 200k-vertex SBM, epoch 1 took 1.7x the later epochs without it (its GEMMs
    // 2.3x: the page faults and the kernel's zeroing of every buffer's first touch).
    if (rounded >= kPrefaultBytes && g_host_prefault.load(std::memory_order_relaxed)) {
      volatile char* page = static_cast<char*>(pointer);
      for (size_t offset = 0; offset < rounded; offset += kPageBytes) page[offset] = 0;
    }
  }
  account(device, static_cast<int64_t>(bytes));
  return pointer;
}

void release_bytes(void* pointer, Device device, size_t bytes) {
  if (!pointer) return;
  if (device == Device::cuda) {
    g_device_ops.release(pointer);
  } else {
    std::free(pointer);
  }
  account(device, -static_cast<int64_t>(bytes));
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  HALOGEN_ASSERT(g_device_ops.copy != nullptr, "device copy without a CUDA backend");
  g_device_ops.copy(dst, dst_device, src, src_device, bytes);
}

void zero_bytes(void* dst, Device device, size_t bytes) {
  if (device == Device::cpu) {
    std::memset(dst, 0, bytes);
    return;
  }
  HALOGEN_ASSERT(g_device_ops.fill_zero != nullptr, "device fill without a CUDA backend");
  g_device_ops.fill_zero(dst, bytes);
}

int64_t bytes_in_use(Device device) { return g_in_use[device_index(device)].load(); }
int64_t peak_bytes(Device device) { return g_peak[device_index(device)].load(); }
void start_peak_window(Device device) {
  const int d = device_index(device);
  g_window_peak[d].store(g_in_use[d].load());
}
int64_t window_peak_bytes(Device device) { return g_window_peak[device_index(device)].load(); }

}  // namespace detail
}  // namespace halogen
