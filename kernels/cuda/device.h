#pragma once
// The CUDA backend's device runtime: which GPU a rank uses, the device-memory hooks of core/buffer.h, streams.
// Internal to the CUDA backend library (libhalogen_cuda.so); the rest of the program reaches these through
// kernels/device.h, whose contracts they implement. Declared without CUDA headers.
#include <cstdint>
#include <string>

#include "kernels/backend.h"

namespace halogen::cuda {

// Number of usable CUDA devices; 0 when the driver is missing or no device is visible (never throws).
int usable_device_count();

// Why the last usable_device_count() returned 0, in CUDA's words (cudaGetErrorString and the error's name, e.g.
// "cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version (cudaErrorInsufficientDriver)");
// "" when it found a device. For skip messages and errors: a driver problem must not read as "no GPU".
std::string device_count_error();

// Selects the GPU for this rank (local_rank modulo visible devices) and installs the device-memory hooks.
// Returns the device ordinal. UserError when no GPU is usable.
int initialise_device(int local_rank);

// Installs core's DeviceMemoryOps (cudaMalloc/cudaFree/cudaMemcpy/cudaMemset).
void install_device_memory();

// "NVIDIA H200 (sm_90, 139.8 GiB)" for the current device, for logs.
std::string device_description();

// The current device's UUID as 32 hex digits (cudaDeviceProp::uuid; a MIG instance has its own), for telling
// whether two ranks use the same physical GPU.
std::string device_uuid();

// cudaMemGetInfo's free bytes on the current device.
int64_t free_device_memory_bytes();

// Streams as void* (= cudaStream_t, = kernels::Stream). create_stream makes a stream on the current device
// that *does* synchronise with the legacy default stream (cudaStreamDefault flags), so that core's Buffer
// copies and zeroing (cudaMemcpy/cudaMemset on the legacy stream) are ordered with the kernels queued on it.
// (NcclComm's communication stream is non-blocking and ordered by events only.)
void* create_stream();
void destroy_stream(void* stream);
void synchronize_stream(void* stream);  // host waits for the stream's work (nullptr = legacy default stream)

// Device-to-device copy bandwidth of the current GPU in GB/s (1e9 bytes/s), counting bytes read plus bytes
// written: the reference against which a memory-bound kernel (SpMM) reports its achieved bandwidth, measured
// in the same run. Median of `iterations` cudaMemcpyAsync of `bytes` bytes after one warm-up, timed with CUDA
// events; allocates and frees two buffers of `bytes` (call it outside timed regions).
double measure_copy_bandwidth_gbs(int64_t bytes = int64_t(1) << 30, int iterations = 10);

}  // namespace halogen::cuda

namespace halogen::kernels::cuda {
// Fills the ops and the device runtime of the backend's table (backend_table.cpp); the communicator factory is
// comm's (comm/nccl/backend_entry.cpp, which also defines the library's entry point).
void fill_backend_table(CudaBackend& table);
}  // namespace halogen::kernels::cuda
