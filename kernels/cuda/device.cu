#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

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
    throw UserError(strformat("out of GPU memory allocating %.1f MiB", bytes / 1048576.0));
  }
  CUDA_CHECK(status);
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

int usable_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

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
  if (count == 0) throw UserError("--device cuda: no usable CUDA device (cudaGetDeviceCount returned 0 or failed)");
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

void* create_stream() {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
  return stream;
}

void destroy_stream(void* stream) {
  if (stream != nullptr) CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
}

void synchronize_stream(void* stream) { CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream))); }

}  // namespace halogen::cuda
