// The device runtime (kernels/device.h) and the loader of the CUDA backend library (kernels/backend.h).
// HALOGEN_CUDA_BACKEND_FILE (the library's file name) is defined by kernels/CMakeLists.txt in builds that make
// the library; without it the loader only honours $HALOGEN_CUDA_LIBRARY.
#include "kernels/device.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "kernels/backend.h"

namespace halogen::kernels {
namespace {

#ifdef HALOGEN_CUDA_BACKEND_FILE
constexpr bool kBackendBuilt = true;
constexpr const char* kBackendFile = HALOGEN_CUDA_BACKEND_FILE;
#else
constexpr bool kBackendBuilt = false;
constexpr const char* kBackendFile = "";
#endif

struct LoadState {
  std::once_flag once;
  std::atomic<const CudaBackend*> table{nullptr};
  std::string path;   // the library that was loaded (or tried last)
  std::string error;  // why nothing was loaded
};

LoadState& load_state() {
  static LoadState state;
  return state;
}

std::string executable_directory() {
  char buffer[4096];
  const ssize_t length = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (length <= 0) return ".";
  std::string path(buffer, static_cast<size_t>(length));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Opens `path` with `flags` and checks its table; nullptr and `error` set on failure.
const CudaBackend* open_backend(const std::string& path, int flags, std::string& error) {
  dlerror();
  void* handle = dlopen(path.c_str(), flags);
  if (handle == nullptr) {
    const char* message = dlerror();
    error = message != nullptr ? message : path + ": dlopen failed";
    return nullptr;
  }
  auto entry = reinterpret_cast<CudaBackendEntry>(dlsym(handle, kCudaBackendEntryPoint));
  if (entry == nullptr) {
    error = path + " has no " + kCudaBackendEntryPoint + " (not a Halogen CUDA backend)";
    return nullptr;
  }
  const CudaBackend* table = entry();
  if (table == nullptr || table->abi_version != kCudaBackendAbiVersion) {
    // Not closed: its static constructors ran and may have registered with the CUDA runtime.
    error = path + " was built from other sources (kernels/op_list.h or kernels/backend.h differ); rebuild it";
    return nullptr;
  }
  return table;
}

std::vector<std::string> candidate_paths() {
  if (!kBackendBuilt) return {};
  const std::string directory = executable_directory();
  return {directory + "/../lib/" + kBackendFile, directory + "/" + kBackendFile};
}

void load(LoadState& state) {
  const int flags = RTLD_NOW | RTLD_LOCAL;
  const char* from_environment = std::getenv("HALOGEN_CUDA_LIBRARY");
  const CudaBackend* table = nullptr;
  if (from_environment != nullptr && *from_environment != 0) {
    state.path = from_environment;
    table = open_backend(state.path, flags, state.error);
    if (table == nullptr) state.error = "cannot load the CUDA backend HALOGEN_CUDA_LIBRARY=" + state.error;
  } else if (!kBackendBuilt) {
    state.error = "this build has no CUDA backend (configure with -DHALOGEN_CUDA=ON)";
  } else {
    std::string ignored;
    table = open_backend(kBackendFile, flags | RTLD_NOLOAD, ignored);  // linked by a test
    if (table != nullptr) state.path = std::string(kBackendFile) + " (already loaded)";
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      if (table != nullptr) break;
      tried += (tried.empty() ? "" : ", ") + path;
      if (access(path.c_str(), F_OK) != 0) continue;
      state.path = path;
      table = open_backend(path, flags, state.error);
      if (table == nullptr) {
        state.error = "cannot load the CUDA backend " + state.error;
        break;  // it exists but does not load: say why, rather than trying a copy elsewhere
      }
    }
    if (table == nullptr && state.error.empty()) {
      state.error = "the CUDA backend library is missing (looked for " + tried + "; set HALOGEN_CUDA_LIBRARY)";
    }
  }
  state.table.store(table, std::memory_order_release);
}

const CudaBackend* try_load() {
  LoadState& state = load_state();
  if (const CudaBackend* table = state.table.load(std::memory_order_acquire)) return table;
  std::call_once(state.once, [&] { load(state); });
  return state.table.load(std::memory_order_acquire);
}

}  // namespace

const CudaBackend& cuda_backend() {
  const CudaBackend* table = try_load();
  if (table == nullptr) throw UserError("device cuda: " + load_state().error);
  return *table;
}

const CudaBackend* cuda_backend_if_loaded() { return load_state().table.load(std::memory_order_acquire); }

namespace device {

bool backend_built() { return kBackendBuilt || std::getenv("HALOGEN_CUDA_LIBRARY") != nullptr; }

bool backend_loaded() { return cuda_backend_if_loaded() != nullptr; }

void require_backend(const std::string& what) {
  if (try_load() == nullptr) throw UserError(what + ": " + load_state().error);
}

std::string backend_status() {
  LoadState& state = load_state();
  if (cuda_backend_if_loaded() != nullptr) return "loaded (" + state.path + ")";
  if (!state.error.empty()) return "cannot be loaded: " + state.error;
  if (!backend_built()) return "not built";
  const std::vector<std::string> paths = candidate_paths();
  return "not loaded (" + (paths.empty() ? std::string("$HALOGEN_CUDA_LIBRARY") : paths.front()) + ")";
}

int usable_device_count() {
  if (!backend_built()) return 0;
  // The CUDA driver talks to the GPUs through /dev/nvidiactl (/dev/dxg under WSL): without either no GPU can be
  // usable, and the backend (265 MiB of CUDA libraries) is not loaded just to say so.
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/dev/dxg", F_OK) != 0) return 0;
  const CudaBackend* table = try_load();
  return table == nullptr ? 0 : table->usable_device_count();
}

int initialise_device(int local_rank) {
  require_backend("--device cuda");
  return cuda_backend().initialise_device(local_rank);
}

std::string device_description() { return cuda_backend().device_description(); }

std::string device_uuid() { return cuda_backend().device_uuid(); }

int64_t free_device_memory_bytes() { return cuda_backend().free_device_memory_bytes(); }

Stream create_stream() { return cuda_backend().create_stream(); }

void destroy_stream(Stream stream) {
  if (stream != nullptr) cuda_backend().destroy_stream(stream);
}

void synchronize_stream(Stream stream) { cuda_backend().synchronize_stream(stream); }

double measure_copy_bandwidth_gbs(int64_t bytes, int iterations) {
  HALOGEN_ASSERT(bytes > 0 && iterations > 0);
  return cuda_backend().measure_copy_bandwidth_gbs(bytes, iterations);
}

void set_gemm_tf32(bool allowed) { cuda_backend().set_gemm_tf32(allowed); }

PhaseTimer::PhaseTimer(int capacity) {
  HALOGEN_ASSERT(capacity >= 1);
  for (int i = 0; i < capacity; ++i) grow();
}

PhaseTimer::~PhaseTimer() {
  const CudaBackend& backend = cuda_backend();
  for (size_t i = 0; i < begin_events_.size(); ++i) {
    backend.destroy_event(begin_events_[i]);
    backend.destroy_event(end_events_[i]);
  }
}

void PhaseTimer::grow() {
  const CudaBackend& backend = cuda_backend();
  begin_events_.push_back(backend.create_event());
  end_events_.push_back(backend.create_event());
}

void PhaseTimer::begin(Stream stream) {
  HALOGEN_ASSERT(!open_, "PhaseTimer::begin twice without end");
  if (used_ == static_cast<int>(begin_events_.size())) grow();
  cuda_backend().record_event(begin_events_[used_], stream);
  open_ = true;
}

void PhaseTimer::end(Stream stream) {
  HALOGEN_ASSERT(open_, "PhaseTimer::end without begin");
  cuda_backend().record_event(end_events_[used_], stream);
  ++used_;
  open_ = false;
}

double PhaseTimer::take_ms() {
  HALOGEN_ASSERT(!open_, "PhaseTimer::take_ms with an open interval");
  const CudaBackend& backend = cuda_backend();
  double total = 0.0;
  for (int i = 0; i < used_; ++i) total += backend.elapsed_ms(begin_events_[i], end_events_[i]);
  used_ = 0;
  return total;
}

NvtxRange::NvtxRange(const char* name) {
  if (const CudaBackend* backend = cuda_backend_if_loaded()) {
    backend->push_range(name);
    pushed_ = true;
  }
}

NvtxRange::~NvtxRange() {
  if (pushed_) cuda_backend_if_loaded()->pop_range();
}

}  // namespace device
}  // namespace halogen::kernels
