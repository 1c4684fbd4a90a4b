// kernels::<op> -> kernels::cpu::<op> for host views, or the CUDA backend's <op> (kernels/backend.h, loaded on
// first use) for device views, chosen by the op's dispatch device (kernels/op_list.h). The chosen backend
// asserts that every other view lives on the same device. A device view without a loadable backend is a
// UserError (it cannot normally exist: device memory comes from kernels::device::initialise_device).
#include "core/check.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "kernels/ops.h"

namespace halogen::kernels {

#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments)                         \
  return_type name(HALOGEN_UNPAREN parameters, Stream stream) {                                       \
    if ((dispatch_device) == Device::cuda) return cuda_backend().name(HALOGEN_UNPAREN arguments, stream); \
    return cpu::name(HALOGEN_UNPAREN arguments, stream);                                              \
  }
#include "kernels/op_list.h"
#undef HALOGEN_OP

namespace {
thread_local detail::ProgressState t_progress;
}  // namespace

ProgressHook::ProgressHook(ProgressFn fn, void* context) {
  HALOGEN_ASSERT(t_progress.fn == nullptr, "progress hooks do not nest");
  t_progress = {fn, context};
}
ProgressHook::~ProgressHook() { t_progress = {}; }
const detail::ProgressState& detail::progress_state() { return t_progress; }

void release_sparse_cache() {
  cpu::release_sparse_cache();
  if (const CudaBackend* backend = cuda_backend_if_loaded()) backend->release_sparse_cache();
}


}  // namespace halogen::kernels
