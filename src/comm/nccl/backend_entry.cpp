// The CUDA backend library's entry point (kernels/backend.h): its ops and device runtime (kernels/cuda) and
// its device communicators (this directory). It lives here, at the top of the library's dependencies
// (comm -> kernels), so that kernels/cuda never names a communicator.
#include "comm/mpi_comm.h"
#include "comm/nccl/host_staged_comm.h"
#include "comm/nccl/nccl_comm.h"
#include "core/error.h"
#include "kernels/backend.h"
#include "kernels/cuda/device.h"

namespace halogen::comm {
namespace {

std::unique_ptr<Communicator> make_backend_device_comm(const std::string& kind) {
  if (kind == "nccl") return std::make_unique<NcclComm>();
  if (kind == "mpi") return std::make_unique<HostStagedComm>(std::make_unique<MpiComm>());
  throw UserError("--comm " + kind + ": expected nccl or mpi");
}

}  // namespace
}  // namespace halogen::comm

extern "C" __attribute__((visibility("default"))) const halogen::kernels::CudaBackend* halogen_cuda_backend() {
  static const halogen::kernels::CudaBackend table = [] {
    halogen::kernels::CudaBackend filled;
    halogen::kernels::cuda::fill_backend_table(filled);
    filled.make_device_comm = &halogen::comm::make_backend_device_comm;
    return filled;
  }();
  return &table;
}
