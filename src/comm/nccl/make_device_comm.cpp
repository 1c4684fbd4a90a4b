#include "comm/nccl/make_device_comm.h"

#include "comm/mpi_comm.h"
#include "comm/nccl/host_staged_comm.h"
#include "comm/nccl/nccl_comm.h"
#include "core/error.h"

namespace halogen::comm {

std::unique_ptr<Communicator> make_device_comm(const std::string& kind) {
  if (kind == "nccl") return std::make_unique<NcclComm>();
  if (kind == "mpi") return std::make_unique<HostStagedComm>(std::make_unique<MpiComm>());
  throw UserError("--comm " + kind + ": expected nccl or mpi");
}

}  // namespace halogen::comm
