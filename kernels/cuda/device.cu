#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "core/buffer.h"
#include "core/check.h"
#include "core/error.h"
#include "kernels/cuda/context.h"

namespace halogen::cuda {
namespace {

void* device_allocate(size_t bytes) {
  void* pointer = nullptr;
  const cudaError_t status = cudaMalloc(&pointer, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-until-read error, or the next launch check would report it
    throw UserError(strformat("out of GPU memory allocating %.1f MiB", bytes / 1048576.0));
  }
  CUDA_CHECK(status);
  // New device memory is zeroed (once, outside any timed loop): a buffer that is read before it was ever
  // written (cuSPARSE/cuBLAS outputs with beta = 0, whose documentation does not promise C unread) holds zeros,
  // never NaN bit patterns left by an earlier allocation. cudaMemset runs on the legacy default stream, with
  // which every stream of this program (cudaStreamDefault flags) and NCCL's (ordered by events) are ordered.
  const cudaError_t zeroed = cudaMemset(pointer, 0, bytes);
  if (zeroed != cudaSuccess) {
    cudaFree(pointer);
    CUDA_CHECK(zeroed);
  }
  return pointer;
}

void device_release(void* pointer) {
  kernels::cuda::forget_sparse_matrices_using(pointer);
  CUDA_CHECK(cudaFree(pointer));
}

void device_copy(void* dst, Device, const void* src, Device, size_t bytes) {
  CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void device_fill_zero(void* dst, size_t bytes) { CUDA_CHECK(cudaMemset(dst, 0, bytes)); }

}  // namespace

namespace {
std::string last_device_count_error;  // why the last cudaGetDeviceCount found no device ("" when it did)
}  // namespace

int usable_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    // Kept with CUDA's own words: "CUDA driver version is insufficient for CUDA runtime version" must not read
    // as "no GPU" (a bundle whose runtime is newer than the machine's driver).
    last_device_count_error =
        strformat("cudaGetDeviceCount: %s (%s)", cudaGetErrorString(status), cudaGetErrorName(status));
    return 0;
  }
  last_device_count_error = count == 0 ? "cudaGetDeviceCount: 0 devices" : "";
  return count;
}

std::string device_count_error() { return last_device_count_error; }

void install_device_memory() {
  DeviceMemoryOps ops;
  ops.allocate = device_allocate;
  ops.release = device_release;
  ops.copy = device_copy;
  ops.fill_zero = device_fill_zero;
  set_device_memory_ops(ops);
}

int initialise_device(int local_rank) {
  const int count = usable_device_count();
  if (count == 0) throw UserError("--device cuda: no usable CUDA device (" + device_count_error() + ")");
  const int device = local_rank % count;
  CUDA_CHECK(cudaSetDevice(device));
  install_device_memory();
  return device;
}

std::string device_description() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties;
  CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  return strformat("%s (sm_%d%d, %.1f GiB)", properties.name, properties.major, properties.minor,
                   properties.totalGlobalMem / 1073741824.0);
}

std::string device_uuid() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp properties;
  CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  std::string hex;
  for (int i = 0; i < 16; ++i) hex += strformat("%02x", static_cast<unsigned char>(properties.uuid.bytes[i]));
  return hex;
}

int64_t free_device_memory_bytes() {
  size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return static_cast<int64_t>(free);
}

void* create_stream() {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  return stream;
}

void destroy_stream(void* stream) {
  if (stream != nullptr) CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
}

void synchronize_stream(void* stream) { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

double measure_copy_bandwidth_gbs(int64_t bytes, int iterations) {
  HALOGEN_ASSERT(bytes > 0 && iterations > 0);
  void *source = nullptr, *target = nullptr;
  CUDA_CHECK(cudaMalloc(&source, static_cast<size_t>(bytes)));
  CUDA_CHECK(cudaMalloc(&target, static_cast<size_t>(bytes)));
  CUDA_CHECK(cudaMemset(source, 1, static_cast<size_t>(bytes)));
  cudaEvent_t begin, end;
  CUDA_CHECK(cudaEventCreate(&begin));
  CUDA_CHECK(cudaEventCreate(&end));
  std::vector<float> ms(static_cast<size_t>(iterations));
  for (int i = -1; i < iterations; ++i) {  // i = -1: warm-up
    CUDA_CHECK(cudaEventRecord(begin, nullptr));
    CUDA_CHECK(cudaMemcpyAsync(target, source, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, nullptr));
    CUDA_CHECK(cudaEventRecord(end, nullptr));
    CUDA_CHECK(cudaEventSynchronize(end));
    if (i >= 0) CUDA_CHECK(cudaEventElapsedTime(&ms[i], begin, end));
  }
  CUDA_CHECK(cudaEventDestroy(begin));
  CUDA_CHECK(cudaEventDestroy(end));
  CUDA_CHECK(cudaFree(source));
  CUDA_CHECK(cudaFree(target));
  std::sort(ms.begin(), ms.end());
  const double median_ms = ms[ms.size() / 2];
  return 2.0 * static_cast<double>(bytes) / (median_ms * 1e-3) / 1e9;
}

}  // namespace halogen::cuda
