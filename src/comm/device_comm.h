#pragma once
// The communicator of a GPU rank, by the name given to `--comm`:
//   "nccl" -> NcclComm over MPI_COMM_WORLD (one GPU per rank; device buffers moved by NCCL on its own stream)
//   "mpi"  -> HostStagedComm over MpiComm (host staging through pinned memory; ranks may share a GPU)
// Both live in the CUDA backend library (comm/nccl/*, loaded at run time: kernels/device.h); this factory is
// available in every build. Call after kernels::device::initialise_device(local_rank) on every rank (it is
// collective). Another name is a UserError naming the flag; so is a build or machine without the backend.
#include <memory>
#include <string>

#include "comm/communicator.h"

namespace halogen::comm {

std::unique_ptr<Communicator> make_device_comm(const std::string& kind);

}  // namespace halogen::comm
