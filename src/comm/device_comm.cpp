#include "comm/device_comm.h"

#include "core/error.h"
#include "kernels/backend.h"

namespace halogen::comm {

std::unique_ptr<Communicator> make_device_comm(const std::string& kind) {
  HALOGEN_USER_CHECK(kind == "nccl" || kind == "mpi", "--comm %s: expected nccl or mpi", kind.c_str());
  return kernels::cuda_backend().make_device_comm(kind);
}

}  // namespace halogen::comm
