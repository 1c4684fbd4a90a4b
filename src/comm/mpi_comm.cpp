#include "comm/mpi_comm.h"

#include <algorithm>
#include <climits>

#include "comm/mpi_session.h"
#include "core/check.h"

namespace halogen::comm {
namespace {

constexpr int kHaloTag = 17;

struct MpiRequest final : Request {
  std::vector<MPI_Request> requests;
};

// MPI counts are int: split a long message into chunks of at most INT_MAX floats (each its own request).
template <typename Post>
void post_chunked(const Message& message, Post post) {
  HALOGEN_ASSERT(message.count >= 0);
  int64_t offset = 0;
  do {
    const int64_t chunk = std::min<int64_t>(message.count - offset, INT_MAX);
    post(message.data + offset, static_cast<int>(chunk));
    offset += chunk;
  } while (offset < message.count);
}

}  // namespace

MpiComm::MpiComm(MPI_Comm base) {
  MPI_CHECK(MPI_Comm_dup(base, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<Request> MpiComm::start_exchange(const std::vector<Message>& sends,
                                                 const std::vector<Message>& receives, kernels::Stream) {
  auto request = std::make_unique<MpiRequest>();
  request->requests.reserve(sends.size() + receives.size());
  // Receives first, so that eager sends find a posted buffer.
  for (const Message& m : receives) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_, "peer %d", m.peer);
    post_chunked(m, [&](float* data, int count) {
      MPI_Request r;
      MPI_CHECK(MPI_Irecv(data, count, MPI_FLOAT, m.peer, kHaloTag, comm_, &r));
      request->requests.push_back(r);
    });
  }
  for (const Message& m : sends) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_, "peer %d", m.peer);
    post_chunked(m, [&](float* data, int count) {
      MPI_Request r;
      MPI_CHECK(MPI_Isend(data, count, MPI_FLOAT, m.peer, kHaloTag, comm_, &r));
      request->requests.push_back(r);
    });
  }
  return request;
}

void MpiComm::wait(std::unique_ptr<Request> request, kernels::Stream) {
  auto* mpi_request = dynamic_cast<MpiRequest*>(request.get());
  HALOGEN_ASSERT(mpi_request != nullptr, "request from another communicator");
  if (mpi_request->requests.empty()) return;
  MPI_CHECK(MPI_Waitall(static_cast<int>(mpi_request->requests.size()), mpi_request->requests.data(),
                        MPI_STATUSES_IGNORE));
}

void MpiComm::allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) {
  wait(start_allreduce_sum(data, count, compute_stream), compute_stream);
}

std::unique_ptr<Request> MpiComm::start_allreduce_sum(float* data, int64_t count, kernels::Stream) {
  HALOGEN_ASSERT(count >= 0);
  auto request = std::make_unique<MpiRequest>();
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    const int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request r;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data + offset, chunk, MPI_FLOAT, MPI_SUM, comm_, &r));
    request->requests.push_back(r);
  }
  return request;
}

void MpiComm::progress(Request& request) {
  auto* mpi_request = dynamic_cast<MpiRequest*>(&request);
  HALOGEN_ASSERT(mpi_request != nullptr, "request from another communicator");
  if (mpi_request->requests.empty()) return;
  // Completed requests become MPI_REQUEST_NULL, which the final MPI_Waitall accepts.
  int done = 0;
  MPI_CHECK(MPI_Testall(static_cast<int>(mpi_request->requests.size()), mpi_request->requests.data(), &done,
                        MPI_STATUSES_IGNORE));
}

void MpiComm::allreduce_sum(double* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_SUM, comm_));
}

void MpiComm::allreduce_sum(int64_t* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_INT64_T, MPI_SUM, comm_));
}

void MpiComm::allreduce_max(double* data, int64_t count) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_MAX, comm_));
}

void MpiComm::barrier() { MPI_CHECK(MPI_Barrier(comm_)); }

void MpiComm::abort(int exit_code) { abort_all(exit_code); }

}  // namespace halogen::comm
