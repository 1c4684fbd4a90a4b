#pragma once
// The CUDA backend's function table: the one interface between the host program and libhalogen_cuda.so.
// Internal to kernels/ (dispatch.cpp, device.cpp) and to the communicator factory of comm/ (device_comm.cpp);
// everyone else calls kernels/ops.h and kernels/device.h.
//
// The library exports one C symbol, kCudaBackendEntryPoint, of type CudaBackendEntry: it returns the table
// (static storage, never freed). Both sides are compiled from this header in the same build, so the table is
// plain C++ (std::string, std::unique_ptr, exceptions cross it: UserError thrown in the library reaches the
// caller's catch). A library from another build is refused by abi_version, a hash of this header's layout and
// of kernels/op_list.h, so a stale library never runs with a mismatched table.
//
// The library leaves core's and comm's symbols (fatal, strformat, set_device_memory_ops, MpiComm, ...)
// undefined: they resolve against the program that loads it (executables export their symbols,
// ENABLE_EXPORTS), so there is one copy of core's state (device memory hooks, logging) in the process.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/ops.h"

namespace halogen::comm {
class Communicator;  // comm/communicator.h; the factory below is comm's (comm/device_comm.h), carried here
}

namespace halogen::kernels {

struct CudaBackend {
  uint64_t abi_version = 0;  // kCudaBackendAbiVersion of the library's build (below)

  // ---- the ops of kernels/op_list.h: kernels::cuda::<op> ----------------------------------------------------
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) \
  return_type (*name)(HALOGEN_UNPAREN parameters, Stream stream) = nullptr;
#include "kernels/op_list.h"
#undef HALOGEN_OP
  void (*release_sparse_cache)() = nullptr;

  // ---- device runtime (contracts: kernels/device.h) -----------------------------------------------------------
  int (*usable_device_count)() = nullptr;
  int (*initialise_device)(int local_rank) = nullptr;
  std::string (*device_description)() = nullptr;
  std::string (*device_uuid)() = nullptr;
  int64_t (*free_device_memory_bytes)() = nullptr;
  Stream (*create_stream)() = nullptr;
  void (*destroy_stream)(Stream stream) = nullptr;
  void (*synchronize_stream)(Stream stream) = nullptr;
  void* (*create_event)() = nullptr;  // cudaEvent_t with timing
  void (*destroy_event)(void* event) = nullptr;
  void (*record_event)(void* event, Stream stream) = nullptr;
  float (*elapsed_ms)(void* begin, void* end) = nullptr;  // waits for `end`
  void (*push_range)(const char* name) = nullptr;         // NVTX
  void (*pop_range)() = nullptr;
  double (*measure_copy_bandwidth_gbs)(int64_t bytes, int iterations) = nullptr;
  void (*set_gemm_tf32)(bool allowed) = nullptr;

  // ---- communicators (comm/nccl/*: NcclComm, HostStagedComm) -------------------------------------------------
  std::unique_ptr<comm::Communicator> (*make_device_comm)(const std::string& kind) = nullptr;
};

using CudaBackendEntry = const CudaBackend* (*)();
constexpr const char* kCudaBackendEntryPoint = "halogen_cuda_backend";

// The signatures of kernels/op_list.h as one string, and a hash of it and of the table's size: the library
// stores the value it was compiled with in abi_version, the loader compares it with its own.
constexpr const char kOpListSignatures[] =
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) #return_type " " #name #parameters ";"
#include "kernels/op_list.h"
#undef HALOGEN_OP
    "";
constexpr uint64_t fnv1a(const char* text, uint64_t hash = 14695981039346656037ull) {
  for (; *text != 0; ++text) hash = (hash ^ static_cast<unsigned char>(*text)) * 1099511628211ull;
  return hash;
}
constexpr uint64_t kCudaBackendAbiVersion = fnv1a(kOpListSignatures) ^ (sizeof(CudaBackend) * 0x9E3779B97F4A7C15ull);

// The loaded backend; loads it on first call. UserError (one line: what was tried and why it failed) when this
// build has no CUDA backend or the library cannot be loaded. Thread-safe.
const CudaBackend& cuda_backend();
// The backend when it is already loaded, else nullptr (never loads).
const CudaBackend* cuda_backend_if_loaded();

}  // namespace halogen::kernels
