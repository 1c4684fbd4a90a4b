#include "comm/nccl/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <vector>

#include "comm/mpi_session.h"
#include "core/check.h"

namespace halogen::comm {

struct NcclComm::State {
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;       // the communication stream
  cudaEvent_t compute_ready = nullptr;  // recorded on the compute stream before each operation
  std::vector<cudaEvent_t> free_events;  // "done" events not held by a request
};

namespace {

struct NcclRequest final : Request {
  cudaEvent_t done = nullptr;
  std::vector<cudaEvent_t>* pool = nullptr;  // the event goes back here when the request ends
  ~NcclRequest() override {
    if (done != nullptr) pool->push_back(done);
  }
};

cudaStream_t to_cuda(kernels::Stream stream) { return static_cast<cudaStream_t>(stream); }

cudaEvent_t take_event(std::vector<cudaEvent_t>& pool) {
  if (pool.empty()) {  // only while the first exchanges run: afterwards events are reused
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    return event;
  }
  cudaEvent_t event = pool.back();
  pool.pop_back();
  return event;
}

}  // namespace

NcclComm::NcclComm(MPI_Comm base) : state_(std::make_unique<State>()) {
  MPI_CHECK(MPI_Comm_dup(base, &mpi_comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(mpi_comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(mpi_comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(mpi_comm_, &size_));
  ncclUniqueId id;
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, mpi_comm_));
  NCCL_CHECK(ncclCommInitRank(&state_->nccl, size_, id, rank_));
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&state_->compute_ready, cudaEventDisableTiming));
  for (int i = 0; i < 4; ++i) {  // enough for the exchanges a layer keeps in flight; more are made on demand
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    state_->free_events.push_back(event);
  }
}

NcclComm::~NcclComm() {
  // Finish what is queued (a destroyed communicator must not be in use), then release.
  CUDA_CHECK(cudaStreamSynchronize(state_->stream));
  NCCL_CHECK(ncclCommDestroy(state_->nccl));
  for (cudaEvent_t event : state_->free_events) CUDA_CHECK(cudaEventDestroy(event));
  CUDA_CHECK(cudaEventDestroy(state_->compute_ready));
  CUDA_CHECK(cudaStreamDestroy(state_->stream));
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
}

kernels::Stream NcclComm::comm_stream() const { return state_->stream; }

std::unique_ptr<Request> NcclComm::start_exchange(const std::vector<Message>& sends,
                                                  const std::vector<Message>& receives,
                                                  kernels::Stream compute_stream) {
  // The comm stream starts after everything queued so far on the compute stream (e.g. packing the rows).
  CUDA_CHECK(cudaEventRecord(state_->compute_ready, to_cuda(compute_stream)));
  CUDA_CHECK(cudaStreamWaitEvent(state_->stream, state_->compute_ready, 0));
  NCCL_CHECK(ncclGroupStart());
  for (const Message& m : receives) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_ && m.count >= 0, "receive from peer %d of %lld",
                   m.peer, (long long)m.count);
    if (m.count > 0)
      NCCL_CHECK(ncclRecv(m.data, static_cast<size_t>(m.count), ncclFloat, m.peer, state_->nccl, state_->stream));
  }
  for (const Message& m : sends) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_ && m.count >= 0, "send to peer %d of %lld",
                   m.peer, (long long)m.count);
    if (m.count > 0)
      NCCL_CHECK(ncclSend(m.data, static_cast<size_t>(m.count), ncclFloat, m.peer, state_->nccl, state_->stream));
  }
  NCCL_CHECK(ncclGroupEnd());
  auto request = std::make_unique<NcclRequest>();
  request->pool = &state_->free_events;
  request->done = take_event(state_->free_events);
  CUDA_CHECK(cudaEventRecord(request->done, state_->stream));
  return request;
}

void NcclComm::wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) {
  auto* nccl_request = dynamic_cast<NcclRequest*>(request.get());
  HALOGEN_ASSERT(nccl_request != nullptr, "request from another communicator");
  CUDA_CHECK(cudaStreamWaitEvent(to_cuda(compute_stream), nccl_request->done, 0));
  // The request's destructor returns its event to the pool: re-recording it later is safe, since a stream
  // wait uses the event's state at the time of the cudaStreamWaitEvent call.
}

std::unique_ptr<Request> NcclComm::start_allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) {
  HALOGEN_ASSERT(count >= 0);
  auto request = std::make_unique<NcclRequest>();
  request->pool = &state_->free_events;
  request->done = take_event(state_->free_events);
  // Recorded even for count == 0 (then without an allreduce): wait() always has an event to wait on.
  if (count > 0) {
    CUDA_CHECK(cudaEventRecord(state_->compute_ready, to_cuda(compute_stream)));
    CUDA_CHECK(cudaStreamWaitEvent(state_->stream, state_->compute_ready, 0));
    NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum, state_->nccl,
                             state_->stream));
  }
  CUDA_CHECK(cudaEventRecord(request->done, state_->stream));
  return request;
}

void NcclComm::allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) {
  wait(start_allreduce_sum(data, count, compute_stream), compute_stream);
}

void NcclComm::allreduce_sum(double* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_SUM, mpi_comm_));
}

void NcclComm::allreduce_sum(int64_t* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_INT64_T, MPI_SUM, mpi_comm_));
}

void NcclComm::allreduce_max(double* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_MAX, mpi_comm_));
}

void NcclComm::barrier() { MPI_CHECK(MPI_Barrier(mpi_comm_)); }

void NcclComm::abort(int exit_code) {
  // Unblocks any NCCL kernel waiting for a peer, then takes the whole job down.
  if (state_ && state_->nccl != nullptr) ncclCommAbort(state_->nccl);
  abort_all(exit_code);
}

}  // namespace halogen::comm
