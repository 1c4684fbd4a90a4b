#pragma once
// PeerLiveness: a job notices within a moment that a rank's process ended without saying goodbye (killed,
// crashed, every process of its host ended), instead of waiting out the communication timeout in the next
// exchange with it. MPI over TCP gives no error for a peer that vanished until the kernel gives up on the
// connection, and under srun a survivor otherwise waits for Slurm's node-failure detection (SlurmdTimeout).
//
// A star of plain TCP connections beside MPI: every rank but 0 connects to rank 0 when the communicator is made
// (rank 0 listens on an ephemeral port of every interface; the others try rank 0's host name as resolved
// locally, then rank 0's interface addresses, with a job token so that a stranger's port is never taken for
// rank 0). A thread per process then waits on those sockets, without polling:
//   - a rank that ends on purpose says so first: 'B' from the destructor (a normal end or an error unwinding),
//     'A' from abort_all or a termination signal (announce_end, async-signal-safe);
//   - a connection that closes without that (the kernel closes a killed process's sockets at once) is a lost
//     rank: rank 0 prints one line naming it ("lost rank 1 (node2)"), tells the other ranks to end ('X') and
//     exits with status 1; when rank 0 is the one lost, the lowest other rank prints the line and every rank
//     exits with status 1.
// A peer that is stopped, frozen or cut off keeps its connection open: that is still the communication
// timeout's case (MpiComm), as is a host whose kernel died (no close reaches anyone).
//
// Setup is collective and never fails the job: where any rank cannot reach rank 0 over TCP (no IPv4 route, a
// firewall), liveness is off for the whole job (one debug line). HALOGEN_PEER_LIVENESS=0 turns it off.
#include <mpi.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace halogen::comm {

class PeerLiveness {
 public:
  // Collective over `comm` (hosts: the host name of every rank). Starts the watching thread when size > 1.
  PeerLiveness(MPI_Comm comm, std::vector<std::string> hosts);
  // Says goodbye to the peers ('B'), stops the thread, closes the sockets.
  ~PeerLiveness();
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  bool active() const { return active_.load(); }

  // Tells the peers of the live PeerLiveness (if any) that this process is ending on purpose, so that none of
  // them reports it lost. Async-signal-safe (write(2) only): called by abort_all and the termination signal
  // handler.
  static void announce_end();
  // Whether rank 0 has announced that it ends on purpose ('A': a signal or abort_all), as seen by this rank.
  // A rank of a job interrupted as a whole leaves the "interrupted by" line to rank 0 when this becomes true.
  static bool leader_announced_end();

 private:
  struct Peer {
    int fd = -1;
    int rank = -1;
    bool ended = false;  // said goodbye (or abort): its close is expected
  };
  // Rank 0: listens, fills `info` (a RootInfo; port 0 where it cannot listen) and starts the accepting thread.
  void setup_root(std::vector<char>& info);
  bool setup_leaf(const std::vector<char>& info);
  void run();
  void lost(int rank);
  void publish_fds();

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  uint64_t token_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::vector<Peer> peers_;          // rank 0: one per other rank (in order of acceptance); else: rank 0
  std::vector<int> announce_fds_;    // peers_' fds, for announce_end (sized before the thread starts)
  std::atomic<int> accepted_{0};     // rank 0 during setup: the peers whose hello was accepted
  std::atomic<bool> active_{false};  // set after the collective setup succeeded (the thread reads it)
  std::thread thread_;
};

}  // namespace halogen::comm
