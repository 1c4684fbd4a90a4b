#include "comm/nccl/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <vector>

#include "comm/mpi_session.h"
#include "comm/watchdog.h"
#include "core/check.h"
#include "core/format.h"
#include "core/log.h"

namespace halogen::comm {

// What the watchdog (comm/watchdog.h) sees of the communicator: NCCL's asynchronous error and the operations in
// flight, each marked by an event of its own recorded on the comm stream after it (never a request's event,
// which the main thread reuses). The queue and the event pool are shared with the watchdog thread (mutex).
struct NcclWatch final : WatchdogSource {
  using Clock = std::chrono::steady_clock;
  struct InFlight {
    cudaEvent_t event = nullptr;
    Clock::time_point started;
  };
  ncclComm_t nccl = nullptr;
  int device = 0, rank = 0, size = 1;
  std::mutex mutex;
  std::deque<InFlight> in_flight;
  std::vector<cudaEvent_t> free_events;
  std::string cuda_error;  // set by the watchdog thread when querying an event fails
  bool device_set = false;  // the watchdog thread made `device` current

  // Main thread: marks the operation just queued on `stream`.
  void track(cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex);
    cudaEvent_t event = nullptr;
    if (free_events.empty()) {
      CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    } else {
      event = free_events.back();
      free_events.pop_back();
    }
    CUDA_CHECK(cudaEventRecord(event, stream));
    in_flight.push_back({event, Clock::now()});
  }

  std::string async_error() override {
    if (!cuda_error.empty()) return cuda_error;
    ncclResult_t result = ncclSuccess;
    const ncclResult_t status = ncclCommGetAsyncError(nccl, &result);
    if (status != ncclSuccess) return strformat("ncclCommGetAsyncError failed: %s", ncclGetErrorString(status));
    if (result == ncclSuccess || result == ncclInProgress) return {};
    return strformat("%s (%s)", ncclGetErrorString(result), ncclGetLastError(nccl));
  }

  double oldest_in_flight_age_s() override {
    if (!device_set) {
      if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
      device_set = true;
    }
    std::lock_guard<std::mutex> lock(mutex);
    while (!in_flight.empty()) {
      const cudaError_t status = cudaEventQuery(in_flight.front().event);
      if (status == cudaErrorNotReady) {
        return std::chrono::duration<double>(Clock::now() - in_flight.front().started).count();
      }
      if (status != cudaSuccess) {
        cuda_error = strformat("CUDA error while waiting for a communication: %s", cudaGetErrorString(status));
        return -1;
      }
      free_events.push_back(in_flight.front().event);
      in_flight.pop_front();
    }
    return -1;
  }

  void fail(const std::string& reason) override {
    log::rank_line("error: NCCL watchdog: " + reason + "; aborting the job");
    ncclCommAbort(nccl);  // unblocks NCCL kernels that wait for a peer
    abort_all_from_any_thread(1);  // this is the watchdog thread: no MPI call under MPI_THREAD_FUNNELED
  }

  ~NcclWatch() override {
    for (const InFlight& entry : in_flight) cudaEventDestroy(entry.event);
    for (cudaEvent_t event : free_events) cudaEventDestroy(event);
  }
};

struct NcclComm::State {
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;       // the communication stream
  cudaEvent_t compute_ready = nullptr;  // recorded on the compute stream before each operation
  std::vector<cudaEvent_t> free_events;  // "done" events not held by a request
  NcclWatch watch;
  std::unique_ptr<CommWatchdog> watchdog;  // polls `watch`; stopped before anything it reads is destroyed
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
  state_->watch.nccl = state_->nccl;
  state_->watch.rank = rank_;
  state_->watch.size = size_;
  CUDA_CHECK(cudaGetDevice(&state_->watch.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&state_->compute_ready, cudaEventDisableTiming));
  for (int i = 0; i < 4; ++i) {  // enough for the exchanges a layer keeps in flight; more are made on demand
    cudaEvent_t event;
    CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    state_->free_events.push_back(event);
  }
  const double timeout_s = comm_timeout_seconds();
  state_->watchdog = std::make_unique<CommWatchdog>(state_->watch, timeout_s, std::min(1.0, timeout_s / 10));
}

NcclComm::~NcclComm() {
  // Finish what is queued (a destroyed communicator must not be in use), then release.
  CUDA_CHECK(cudaStreamSynchronize(state_->stream));  // the watchdog still guards this wait
  state_->watchdog.reset();
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
  // Every message is checked before the group opens: an assert (an exception) between ncclGroupStart and
  // ncclGroupEnd would leave the group open, and the next NCCL call of this thread would join it.
  for (const Message& m : receives)
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_ && m.count >= 0, "receive from peer %d of %lld",
                   m.peer, (long long)m.count);
  for (const Message& m : sends)
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_ && m.count >= 0, "send to peer %d of %lld",
                   m.peer, (long long)m.count);
  // A failing ncclSend/ncclRecv throws inside the group: the guard closes it on the way out.
  struct GroupGuard {
    bool open = true;
    ~GroupGuard() {
      if (open) ncclGroupEnd();  // the error already being reported is the one that matters
    }
  } group;
  NCCL_CHECK(ncclGroupStart());
  for (const Message& m : receives)
    if (m.count > 0)
      NCCL_CHECK(ncclRecv(m.data, static_cast<size_t>(m.count), ncclFloat, m.peer, state_->nccl, state_->stream));
  for (const Message& m : sends)
    if (m.count > 0)
      NCCL_CHECK(ncclSend(m.data, static_cast<size_t>(m.count), ncclFloat, m.peer, state_->nccl, state_->stream));
  group.open = false;
  NCCL_CHECK(ncclGroupEnd());
  state_->watch.track(state_->stream);
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
    state_->watch.track(state_->stream);
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
  if (state_) state_->watchdog.reset();  // no poll of a communicator being aborted
  if (state_ && state_->nccl != nullptr) ncclCommAbort(state_->nccl);
  abort_all(exit_code);
}

}  // namespace halogen::comm
