#pragma once
// The device and communicator of one rank, from the `--device cpu|cuda` and `--comm nccl|mpi` flags of
// `halogen train` and `halogen bench epoch`:
//   cpu:  MpiComm (host buffers);
//   cuda: the CUDA backend (kernels/device.h, loaded here), the GPU of this rank = local rank modulo visible
//         GPUs (kernels::device::initialise_device, which also installs device memory for Buffer; its
//         description is logged per rank), then NcclComm (--comm nccl, the default; one GPU per rank) or
//         HostStagedComm (--comm mpi; ranks may share a GPU), made by comm::make_device_comm; --comm auto (the
//         default) picks NCCL when every rank has a GPU of its own and host-staged MPI when ranks share one
//         (comm::resolve_device_comm compares the ranks' GPU UUIDs).
// An empty `device` means cuda when the CUDA backend loads and every rank sees a usable GPU, else cpu. An empty
// `comm` means auto. Steps that may fail on some ranks only run collectively (no rank is left waiting in NCCL's
// setup). Errors (--device cuda without CUDA backend or GPU, --comm nccl with cpu) are UserErrors; --comm auto
// and --comm mpi are accepted with cpu (CPU ranks always use MPI).
#include <functional>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/mpi_session.h"
#include "core/buffer.h"

namespace halogen::app {

// OpenMP threads of this rank: `threads` when > 0, else OMP_NUM_THREADS when set, else the cores this process may
// run on shared among the node's ranks. Warns (rank 0) when more threads are asked for than the process's CPU
// affinity allows, the usual sign of `mpirun` binding each rank to one core.
void set_rank_threads(int threads, const comm::MpiSession& session);

// Flag checks that need no MPI: --device cuda loads the CUDA backend here, so a build or machine without one
// refuses it before MPI starts.
void check_device_flags_before_mpi(const std::string& device, const std::string& comm);

// After the MpiSession, on every rank. Sets `device` to the chosen one.
std::unique_ptr<comm::Communicator> make_rank_comm(const std::string& device_flag, const std::string& comm_flag,
                                                   const comm::MpiSession& session, Device& device);

// The failure policy of a command's work on every rank: runs `job`; train::PeerFailed (another rank failed and
// printed why) sets exit code 2; a UserError, raised on every rank in step by collective checks, is printed and
// sets exit code 2 here, before MpiSession finalizes (printed after it, a rank exiting first with status 2 makes
// mpirun kill this rank before its line is out); any other exception, raised on this rank only while the others
// may wait in a collective, is printed and takes the whole job down (`rank_comm->abort(1)`). `rank_comm` is read
// when the error happens, so `job` may replace it.
void run_rank_job(std::unique_ptr<comm::Communicator>& rank_comm, const std::function<void()>& job);
// The same, for a job whose communicator stays the same.
void run_rank_job(comm::Communicator& comm, const std::function<void()>& job);

}  // namespace halogen::app
