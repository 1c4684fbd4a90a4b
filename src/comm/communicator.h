#pragma once
// Communicator: what a rank needs from the others during training. MpiComm moves host buffers with MPI;
// NcclComm (in the CUDA backend library; comm/device_comm.h makes it) moves device buffers with NCCL on its own
// stream. Both implement the same calls, so the trainer and the halo exchange are written once.
//
// Asynchrony: start_* posts the transfers (or the allreduce) and returns a request; wait() completes it.
// Between the two the caller runs the local product or the rest of the backward pass (overlap). On NCCL,
// "complete" means the compute stream waits on an event recorded on the communication stream (no host
// synchronisation).
#include <cstdint>
#include <memory>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::comm {

// One peer-to-peer message: `count` floats at `data`, to/from rank `peer`.
struct Message {
  int peer = 0;
  float* data = nullptr;
  int64_t count = 0;
};

class Request {
 public:
  virtual ~Request() = default;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual Device device() const = 0;

  // Posts all sends and receives of one exchange (any peers, including none). Buffers must stay untouched
  // until wait(). Self-messages (peer == rank) are not allowed; callers copy locally instead.
  virtual std::unique_ptr<Request> start_exchange(const std::vector<Message>& sends,
                                                  const std::vector<Message>& receives,
                                                  kernels::Stream compute_stream) = 0;
  virtual void wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) = 0;

  // In-place sum over all ranks (weight gradients, loss, metric counts).
  virtual void allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) = 0;
  // The same sum, started without waiting (bucketed gradient reduction overlapped with the backward pass,
  // nn/gradient_reducer.h): reads `data` once what is queued on `compute_stream` so far is done, and
  // wait(request, compute_stream) makes the sums visible to work queued afterwards on that stream. `data`
  // must stay untouched in between. Every rank starts its allreduces in the same order. Bitwise contract:
  // allreduce_sum(data, count, s) == wait(start_allreduce_sum(data, count, s), s) in every communicator (the
  // blocking call is implemented as exactly that), so results never depend on which of the two was used.
  virtual std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t count,
                                                       kernels::Stream compute_stream) = 0;
  // Lets a started operation advance without waiting for it. MPI moves data of non-blocking collectives only
  // inside MPI calls (no progress thread), so callers that do long local work between start and wait call
  // this now and then; where transfers progress by themselves (NCCL, one rank) it does nothing.
  virtual void progress(Request& /*request*/) {}
  virtual void allreduce_sum(double* data, int64_t count) = 0;  // host scalars
  virtual void allreduce_sum(int64_t* data, int64_t count) = 0;  // host counts
  virtual void allreduce_max(double* data, int64_t count) = 0;   // host scalars (timings)
  virtual void barrier() = 0;
  // Aborts every rank (MPI_Abort / ncclCommAbort + MPI_Abort).
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

}  // namespace halogen::comm
