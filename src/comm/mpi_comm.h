#pragma once
// MpiComm: the Communicator over MPI_COMM_WORLD (or a duplicate of any communicator) for host buffers.
// Exchanges post one MPI_Irecv per receive and one MPI_Isend per send (tag kHaloTag) and complete them with
// MPI_Waitall in wait(). The float allreduce is MPI_Iallreduce (one per INT_MAX floats), completed by
// MPI_Waitall in wait() and advanced by MPI_Testall in progress(); the blocking float allreduce is start + wait
// (so both give the same bits). Host scalar collectives are blocking MPI_Allreduce calls. Requires an
// MpiSession (MPI up).
#include <mpi.h>

#include "comm/communicator.h"

namespace halogen::comm {

class MpiComm final : public Communicator {
 public:
  // Duplicates `base` so that our messages never match anyone else's.
  explicit MpiComm(MPI_Comm base = MPI_COMM_WORLD);
  ~MpiComm() override;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cpu; }

  std::unique_ptr<Request> start_exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                                          kernels::Stream compute_stream) override;
  void wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) override;

  void allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  void progress(Request& request) override;
  void allreduce_sum(double* data, int64_t count) override;
  void allreduce_sum(int64_t* data, int64_t count) override;
  void allreduce_max(double* data, int64_t count) override;
  void barrier() override;
  [[noreturn]] void abort(int exit_code) override;

  MPI_Comm handle() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace halogen::comm
