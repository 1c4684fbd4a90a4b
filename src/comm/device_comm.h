#pragma once
// The communicator of a GPU rank, by the name given to `--comm`:
//   "nccl" -> NcclComm over MPI_COMM_WORLD (one GPU per rank; device buffers moved by NCCL on its own stream)
//   "mpi"  -> HostStagedComm over MpiComm (host staging through pinned memory; ranks may share a GPU)
//   "auto" -> one of the two, chosen by resolve_device_comm below (the default of --device cuda)
// Both live in the CUDA backend library (comm/nccl/*, loaded at run time: kernels/device.h); this factory is
// available in every build. Call after kernels::device::initialise_device(local_rank) on every rank (it is
// collective). Another name is a UserError naming the flag; so is a build or machine without the backend.
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace halogen::comm {

// `kind` is "nccl" or "mpi" ("auto" must be resolved first).
std::unique_ptr<Communicator> make_device_comm(const std::string& kind);

// The communicator --comm auto picks, from the device ids (GPU UUIDs, kernels::device::device_uuid) of every
// rank of the job, in rank order: "nccl" when no two ranks share a device (NCCL needs one GPU per rank: it
// aborts on a duplicate device), "mpi" (host-staged) when any two do, e.g. 2 ranks on a machine with one GPU.
// Comparing UUIDs rather than "local ranks > visible GPUs" also gets CUDA_VISIBLE_DEVICES right (4 ranks that
// each see one different GPU share nothing). Pure: the same answer on every rank given the same list.
std::string choose_device_comm(const std::vector<std::string>& device_ids);

// `requested` ("auto", "nccl", "mpi"; empty = "auto") resolved on every rank (collective over MPI_COMM_WORLD
// when it is "auto": an allgather of each rank's `device_id`). "nccl" is returned as asked even when ranks
// share a device (NcclComm then fails with NCCL's own error): an explicit choice is never overridden.
std::string resolve_device_comm(const std::string& requested, const std::string& device_id);

}  // namespace halogen::comm
