#pragma once
// CUDA device runtime for Halogen: which GPU a rank uses, and the device-memory hooks of core/buffer.h.
// Declared without CUDA headers so that host code (train, apps) can call them in CUDA builds.
namespace halogen::cuda {

// Number of usable CUDA devices; 0 when the driver is missing or no device is visible (never throws).
int usable_device_count();

// Selects the GPU for this rank (local_rank modulo visible devices) and installs the device-memory hooks.
// Returns the device ordinal. UserError when no GPU is usable.
int initialise_device(int local_rank);

// Installs core's DeviceMemoryOps (cudaMalloc/cudaFree/cudaMemcpy/cudaMemset).
void install_device_memory();

}  // namespace halogen::cuda
