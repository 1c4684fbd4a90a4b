#pragma once
// The device runtime: everything above kernels/ needs of a GPU besides the ops (which GPU a rank uses,
// streams, event timing, NVTX ranges, a bandwidth reference). Plain C++ that compiles and links in every
// build; no caller tests a CUDA macro.
//
// The CUDA backend is a shared library (libhalogen_cuda.so: kernels/cuda/*, comm/nccl/*; linked to cudart,
// cuSPARSE, cuBLAS and NCCL) that the program does NOT link: it is opened with dlopen on the first call that
// needs a GPU (require_backend, initialise_device, usable_device_count on a machine with an NVIDIA driver), so
// a command that never asks for a GPU maps no CUDA library. Where it is looked for, first match wins:
//   1. $HALOGEN_CUDA_LIBRARY (a path; an error names it when it cannot be loaded);
//   2. a copy already loaded into the process (a test that links the library);
//   3. <directory of the executable>/../lib/libhalogen_cuda.so   (the build tree and the GPU bundle: bin/, lib/)
//   4. <directory of the executable>/libhalogen_cuda.so
// When none loads (a build without CUDA, a missing library, a missing libcudart), the runtime says "no CUDA
// backend": usable_device_count() == 0, and every call that needs a device throws one UserError line saying
// what was tried and why it failed (dlerror's text).
//
// Functions that take or make streams/events need a loaded backend and an initialised device; they are only
// reached with Device::cuda, which exists after initialise_device. The NVTX functions are no-ops until the
// backend is loaded (so that tracing never loads it).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace halogen::kernels::device {

// ---- the backend ----------------------------------------------------------------------------------------------
// True when this build made the CUDA backend library (configure-time; loads nothing).
bool backend_built();
// True when the backend is loaded now (loads nothing).
bool backend_loaded();
// Loads the backend; UserError "<what>: ..." (one line) when that is impossible. `what` names the request,
// e.g. "--device cuda".
void require_backend(const std::string& what = "--device cuda");
// "not built", "not loaded (<path>)", "loaded (<path>)" or "cannot be loaded: <reason>" (loads nothing), for
// logs and `halogen --version`.
std::string backend_status();

// ---- devices ----------------------------------------------------------------------------------------------------
// Number of usable CUDA devices: 0 when there is no backend (see above), no driver or no visible GPU. Loads the
// backend when it is built and the machine has an NVIDIA device node (/dev/nvidiactl, or /dev/dxg under WSL),
// so that `train` without --device maps no CUDA library on a machine without a GPU. Never throws.
int usable_device_count();
// Selects this rank's GPU (local_rank modulo the visible GPUs), makes it current and installs core's device
// memory hooks (Buffer on Device::cuda). Returns the device ordinal. UserError when there is no backend or no
// usable GPU.
int initialise_device(int local_rank);
// "NVIDIA H200 (sm_90, 139.8 GiB)" for the current device, for logs.
std::string device_description();
// The current device's UUID (32 hex digits): equal on two ranks exactly when they share a GPU (comm/device_comm.h
// uses it to choose the communicator of --comm auto).
std::string device_uuid();
// Bytes free on the current device now (cudaMemGetInfo), for planning memory before allocating it
// (train/memory_estimate.h); --device cuda only (UserError without the backend).
int64_t free_device_memory_bytes();

// ---- streams ----------------------------------------------------------------------------------------------------
// A stream on the current device that synchronises with the legacy default stream (cudaStreamDefault), so
// core's Buffer copies and zeroing (legacy stream) are ordered with the kernels queued on it.
Stream create_stream();
void destroy_stream(Stream stream);      // nullptr: nothing
void synchronize_stream(Stream stream);  // the host waits for the stream's work (nullptr = legacy default stream)

// Device-to-device copy bandwidth of the current GPU in GB/s (1e9 bytes/s), counting bytes read plus bytes
// written: the reference against which a memory-bound kernel (SpMM) reports its achieved bandwidth, measured in
// the same run. Median of `iterations` copies of `bytes` bytes after one warm-up, timed with events; allocates
// and frees two buffers of `bytes` (call it outside timed regions).
double measure_copy_bandwidth_gbs(int64_t bytes = int64_t(1) << 30, int iterations = 10);

// GEMM math mode of the CUDA backend, process-wide: false (the default) = full FP32 products (cuBLAS
// CUBLAS_DEFAULT_MATH, set explicitly on every handle: results comparable with the CPU's FP32 BLAS); true =
// TF32 tensor cores allowed (CUBLAS_TF32_TENSOR_OP_MATH: inputs rounded to a 10-bit mantissa, ~1e-3 relative
// error per product, several times the GEMM throughput on sm_80+). `halogen train --tf32` sets it. Needs the
// backend (loads it); takes effect at the next gemm call of every thread.
void set_gemm_tf32(bool allowed);

// ---- timing and tracing -----------------------------------------------------------------------------------------
// Sum of GPU-side durations of [begin, end) intervals recorded on streams, with CUDA events. No host
// synchronisation until take_ms(). Intervals must be closed (end after begin) before take_ms(). Events are
// created in the constructor (`capacity` intervals) and reused; more intervals per epoch than that grow the
// pool once.
//   PhaseTimer timer;  timer.begin(stream); ...enqueue... timer.end(stream);  double ms = timer.take_ms();
class PhaseTimer {
 public:
  explicit PhaseTimer(int capacity = 16);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  void begin(Stream stream);
  void end(Stream stream);
  // Milliseconds of all intervals since the last take_ms(); waits for the last end event. Starts over.
  double take_ms();
  int intervals() const { return used_; }

 private:
  void grow();
  std::vector<void*> begin_events_, end_events_;  // cudaEvent_t
  int used_ = 0;
  bool open_ = false;
};

// An NVTX push/pop range (visible in Nsight Systems) for the lifetime of the object. Nothing when the backend
// is not loaded; costs nothing measurable when no profiler is attached.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool pushed_ = false;
};

}  // namespace halogen::kernels::device
