#pragma once
// NcclComm: the Communicator for device buffers. Compiled into the CUDA backend library (libhalogen_cuda.so);
// the program makes it with comm::make_device_comm("nccl") (comm/device_comm.h).
//
// - Construction is collective over `base`: rank 0 makes an ncclUniqueId, MPI_Bcast sends it to all, every
//   rank calls ncclCommInitRank on its *current* CUDA device. So call
//   kernels::device::initialise_device(local_rank) (GPU = local rank modulo visible GPUs) before
//   constructing. NCCL needs one GPU per rank; several ranks sharing a GPU must use MpiComm with host staging
//   instead.
// - Every NCCL call of this communicator runs on one communication stream (non-blocking, created here), so
//   all ranks issue them in the same order (no cross-stream deadlock). Ordering with the caller's compute
//   stream is by CUDA events only, never by host synchronisation:
//     start_exchange: record "ready" on the compute stream -> comm stream waits on it -> one
//                     ncclGroupStart / ncclRecv... / ncclSend... / ncclGroupEnd -> record "done" on the comm
//                     stream (held by the returned Request);
//     wait:           the compute stream waits on "done" (returns at once on the host).
//     start_allreduce_sum: the same pattern around one in-place ncclAllReduce ("done" held by the Request,
//                     completed by wait());
//     allreduce_sum(float*): start_allreduce_sum + wait; when it returns, work queued afterwards on the compute
//                     stream sees the sums (the host must synchronise the compute stream before reading them).
//   An allreduce in flight delays the exchanges queued after it (one comm stream, in issue order): the
//   backward's halo exchanges wait behind a gradient bucket started before them.
//   Zero-length messages are skipped on both sides (the halo plan gives both sides the same counts).
// - Host scalars (loss, counts, timings) and barrier() go through MPI on a duplicate of `base`.
// - abort(): ncclCommAbort, then MPI_Abort of the job.
// - Watchdog (comm/watchdog.h): a thread polls ncclCommGetAsyncError and the age of the oldest operation in
//   flight (an event recorded after each exchange/allreduce); an asynchronous NCCL error, or an operation in
//   flight longer than HALOGEN_COMM_TIMEOUT seconds (default 600), prints one line naming the cause, calls
//   ncclCommAbort and aborts the job with exit status 1, instead of leaving it hung in a later synchronisation.
// - Requests must be waited on (or dropped) before the communicator is destroyed.
#include <mpi.h>

#include <memory>

#include "comm/communicator.h"

namespace halogen::comm {

class NcclComm final : public Communicator {
 public:
  explicit NcclComm(MPI_Comm base = MPI_COMM_WORLD);
  ~NcclComm() override;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cuda; }

  std::unique_ptr<Request> start_exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                                          kernels::Stream compute_stream) override;
  void wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) override;

  void allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  void allreduce_sum(double* data, int64_t count) override;
  void allreduce_sum(int64_t* data, int64_t count) override;
  void allreduce_max(double* data, int64_t count) override;
  void barrier() override;
  [[noreturn]] void abort(int exit_code) override;

  // The communication stream (cudaStream_t), e.g. for timing the exchanges with cuda::PhaseTimer.
  kernels::Stream comm_stream() const;

 private:
  struct State;  // NCCL and CUDA handles (nccl_comm.cpp), so this header needs neither library's headers
  std::unique_ptr<State> state_;
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace halogen::comm
