#pragma once
// MpiComm: the Communicator over MPI_COMM_WORLD (or a duplicate of any communicator) for host buffers.
// Exchanges post one MPI_Irecv per receive and one MPI_Isend per send (tag kHaloTag) and complete them with
// MPI_Waitall in wait(). The float allreduce is MPI_Iallreduce (one per INT_MAX floats), completed by
// MPI_Waitall in wait() and advanced by MPI_Testall in progress(); the blocking float allreduce is start + wait
// (so both give the same bits). Host scalar collectives and the barrier are their non-blocking forms, waited on
// the same way. Requires an MpiSession (MPI up).
//
// No wait is unbounded: every completion polls MPI_Testall and gives up after the communication timeout
// (comm_timeout_seconds(): --comm-timeout, HALOGEN_COMM_TIMEOUT, default 600 s). A peer that died, was stopped
// (SIGSTOP, a frozen host) or lost its link would otherwise leave this rank in MPI_Waitall forever: MPI over TCP
// sees no error until the kernel gives up on the connection (15 minutes or more), and a stopped process sends
// no error at all. On timeout the rank prints one line naming what it waited for and, for point-to-point
// messages, the peers still owed (rank number and host name), then aborts the job (MPI_Abort). A watchdog thread
// (comm/watchdog.h) does the same 5 s later for a main thread that is stuck inside an MPI call (after a peer's
// host died, OpenMPI's own abort can block under srun), ending this process alone; the launcher ends the rest.
// A peer whose process ended (killed, crashed, its host's processes gone) is noticed sooner, within a moment,
// by PeerLiveness (comm/liveness.h): the timeout remains for a peer that is stopped, frozen or cut off.
#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/liveness.h"
#include "comm/watchdog.h"

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
  // The host name of every rank (gathered at construction), for messages.
  const std::string& host_of(int rank) const { return hosts_.at(static_cast<size_t>(rank)); }
  double timeout_seconds() const { return timeout_s_; }

 private:
  // Completes `requests` (peers[i]: the rank of requests[i], or -1 for a collective) within the timeout, else
  // aborts the job naming `what` and the peers still pending.
  // peers == nullptr: all collectives. No allocation (it runs every epoch).
  void wait_all(MPI_Request* requests, int count, const int* peers, const char* what);
  [[noreturn]] void fail_timeout(const MPI_Request* requests, int count, const int* peers, const char* what,
                                 double waited_s);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 600;
  std::vector<std::string> hosts_;
  std::unique_ptr<PeerLiveness> liveness_;  // a peer whose process ended without a goodbye ends the job at once
  std::unique_ptr<WatchdogSource> stuck_;  // the current wait's age, for watchdog_
  std::unique_ptr<CommWatchdog> watchdog_;
};

}  // namespace halogen::comm
