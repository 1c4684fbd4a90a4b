#include "comm/mpi_comm.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

#include "comm/liveness.h"
#include "comm/mpi_session.h"
#include "comm/watchdog.h"
#include "core/check.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"

namespace halogen::comm {
namespace {

constexpr int kHaloTag = 17;

struct MpiRequest final : Request {
  std::vector<MPI_Request> requests;
  std::vector<int> peers;  // per request: the peer rank, or -1 for a collective
  const char* what = "an exchange";
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

// What this rank is waiting for right now (MpiComm::wait_all), for the line a SIGTERM/SIGINT handler prints:
// when a host dies, the launcher ends the surviving ranks with SIGTERM, and its own message names the lost
// daemon's host but no rank; each survivor then says which ranks it was still waiting for. Written by the main
// thread, read by whichever thread takes the signal (plain loads of what was published before `active`).
struct WaitState {
  const MPI_Request* requests = nullptr;
  const int* peers = nullptr;
  int count = 0;
  const char* what = nullptr;
  timespec start{};
  std::atomic<bool> active{false};
};
WaitState g_wait;

// Seconds since the current wait began (clock_gettime: async-signal-safe, so the handler below uses it too).
double wait_age_s() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - g_wait.start.tv_sec) +
         1e-9 * static_cast<double>(now.tv_nsec - g_wait.start.tv_nsec);
}
const MpiComm* g_comm = nullptr;  // the communicator whose hosts the handler names
struct sigaction g_previous_term, g_previous_int;

// Async-signal-safe appends to a fixed buffer.
struct SignalLine {
  char text[1024];
  size_t length = 0;
  void add(const char* s) {
    while (*s != '\0' && length + 1 < sizeof(text)) text[length++] = *s++;
  }
  void add(long long v) {
    char digits[24];
    int n = 0;
    const bool negative = v < 0;
    unsigned long long u = negative ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0 && n < 23);
    if (negative) add("-");
    while (n > 0 && length + 1 < sizeof(text)) text[length++] = digits[--n];
  }
};

void on_termination_signal(int sig) {
  PeerLiveness::announce_end();  // ending on purpose: the peers must not report this rank lost
  const MpiComm* comm = g_comm;
  if (comm != nullptr) {
    SignalLine line;
    line.add("[");
    line.add(static_cast<long long>(comm->rank()));
    line.add("/");
    line.add(static_cast<long long>(comm->size()));
    line.add("] error: ");
    line.add(comm->host_of(comm->rank()).c_str());
    line.add(sig == SIGTERM ? ": ended by SIGTERM" : ": interrupted by SIGINT");
    // Only a rank that has waited for named peers for 1 s or more, or for a collective for 2 s or more, says
    // so: when a rank fails with an error of its own (or PeerLiveness ended the job), the others are ended a
    // moment later in whatever they were doing, and that needs no line.
    bool waiting = g_wait.active.load(std::memory_order_acquire);
    const long long ms = static_cast<long long>(wait_age_s() * 1e3);
    if (waiting && ms < (g_wait.peers == nullptr ? 2000 : 1000)) waiting = false;
    if (waiting) {
      line.add(" after waiting ");
      line.add(ms / 1000);
      line.add(".");
      line.add((ms % 1000) / 100);
      line.add(" s for ");
      line.add(g_wait.what);
      line.add(" with ");
      int named = 0;
      for (int i = 0; i < g_wait.count && named < 8; ++i) {
        if (g_wait.requests[i] == MPI_REQUEST_NULL) continue;
        const int peer = g_wait.peers != nullptr ? g_wait.peers[i] : -1;
        if (peer < 0) continue;
        bool seen = false;
        for (int j = 0; j < i; ++j)
          if (g_wait.requests[j] != MPI_REQUEST_NULL && g_wait.peers[j] == peer) seen = true;
        if (seen) continue;
        line.add(named++ == 0 ? "rank " : ", rank ");
        line.add(static_cast<long long>(peer));
        line.add(" (");
        line.add(comm->host_of(peer).c_str());
        line.add(")");
      }
      if (named == 0 && comm->size() == 2) {
        line.add("rank ");
        line.add(static_cast<long long>(1 - comm->rank()));
        line.add(" (");
        line.add(comm->host_of(1 - comm->rank()).c_str());
        line.add(") in a collective");
      } else if (named == 0) {
        line.add("the other ranks (a collective)");
      }
      line.add(" (when the launcher reports a lost host or rank, that is the one this rank waited for)");
    }
    line.add("\n");
    if (waiting) {
      ssize_t ignored = write(STDERR_FILENO, line.text, line.length);
      (void)ignored;
    }
  }
  // A command with an interrupt::Guard (train, predict) removes its temporaries and ends with one line and
  // exit 128 + signal; otherwise the default action (the launcher and the shell see "killed by signal").
  if (interrupt::notify(sig)) return;
  signal(sig, SIG_DFL);
  raise(sig);
}

// "rank 1 (node2), rank 3 (node4)": the peers of the requests still pending (for a collective: the other rank
// of a 2-rank job, else "one of the other ranks").
std::string pending_peers(const MpiComm& comm, const MPI_Request* requests, int n, const int* peers) {
  std::vector<int> pending;
  for (int i = 0; i < n; ++i)
    if (requests[i] != MPI_REQUEST_NULL && peers != nullptr && peers[i] >= 0 &&
        std::find(pending.begin(), pending.end(), peers[i]) == pending.end())
      pending.push_back(peers[i]);
  std::sort(pending.begin(), pending.end());
  std::string who;
  for (int peer : pending)
    who += strformat("%srank %d (%s)", who.empty() ? "" : ", ", peer, comm.host_of(peer).c_str());
  if (who.empty()) {
    // A collective: any other rank may be the one missing.
    who = "one of the other ranks";
    if (comm.size() == 2)
      who = strformat("rank %d (%s)", 1 - comm.rank(), comm.host_of(1 - comm.rank()).c_str());
  }
  return who;
}

std::string timeout_line(const MpiComm& comm, const char* what, const std::string& who, double waited_s) {
  return strformat(
      "error: communication timeout on %s: %s with %s did not complete within %.0f s (the peer died, was stopped "
      "or lost its network link; --comm-timeout or HALOGEN_COMM_TIMEOUT sets the limit); aborting the job",
      comm.host_of(comm.rank()).c_str(), what, who.c_str(), waited_s);
}

// The backup of the main thread's deadline: fails 5 s after it, from its own thread.
class StuckWait final : public WatchdogSource {
 public:
  explicit StuckWait(const MpiComm& comm) : comm_(comm) {}
  std::string async_error() override { return {}; }
  double oldest_in_flight_age_s() override {
    if (!g_wait.active.load(std::memory_order_acquire)) return -1;
    return wait_age_s() - 5.0;
  }
  void fail(const std::string&) override {
    const double waited = oldest_in_flight_age_s() + 5.0;
    log::rank_line(timeout_line(comm_, g_wait.what,
                                pending_peers(comm_, g_wait.requests, g_wait.count, g_wait.peers), waited) +
                   " (the MPI call did not return)");
    abort_all_from_any_thread(1);
  }

 private:
  const MpiComm& comm_;
};

}  // namespace

MpiComm::MpiComm(MPI_Comm base) {
  MPI_CHECK(MPI_Comm_dup(base, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  timeout_s_ = comm_timeout_seconds();
  // Every rank's host name, for the messages that name a peer (a collective call, before any failure).
  constexpr int kHostChars = 64;
  char own[kHostChars] = {};
  if (gethostname(own, kHostChars - 1) != 0) std::strncpy(own, "?", kHostChars - 1);
  std::vector<char> all(static_cast<size_t>(size_) * kHostChars);
  MPI_CHECK(MPI_Allgather(own, kHostChars, MPI_CHAR, all.data(), kHostChars, MPI_CHAR, comm_));
  hosts_.resize(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) hosts_[static_cast<size_t>(r)] = std::string(&all[static_cast<size_t>(r) * kHostChars]);
  if (g_comm == nullptr && size_ > 1) {
    g_comm = this;
    liveness_ = std::make_unique<PeerLiveness>(comm_, hosts_);
    stuck_ = std::make_unique<StuckWait>(*this);
    watchdog_ = std::make_unique<CommWatchdog>(*stuck_, timeout_s_, 1.0);
    struct sigaction action{};
    action.sa_handler = on_termination_signal;
    action.sa_flags = SA_RESTART;  // the handler may return (to a guard's thread): calls in flight go on
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &g_previous_term);
    sigaction(SIGINT, &action, &g_previous_int);
    // A job signalled as a whole (scancel, Ctrl-C under mpirun) prints one "interrupted by" line, rank 0's: the
    // others stay quiet once rank 0 has announced its end (within half a second), and speak when only they were.
    interrupt::set_rank_reporting(strformat("[%d/%d] ", rank_, size_), [rank = rank_] {
      if (rank == 0) return false;
      for (int i = 0; i < 50 && !PeerLiveness::leader_announced_end(); ++i) usleep(10000);
      return PeerLiveness::leader_announced_end();
    });
  }
}

void MpiComm::wait_all(MPI_Request* requests, int n, const int* peers, const char* what) {
  if (n == 0) return;
  int done = 0;
  MPI_CHECK(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
  if (done) return;
  g_wait.requests = requests;
  g_wait.peers = peers;
  g_wait.count = n;
  g_wait.what = what;
  clock_gettime(CLOCK_MONOTONIC, &g_wait.start);
  g_wait.active.store(true, std::memory_order_release);
  bool patient = false;  // past the first millisecond: poll every 50 us instead of spinning
  for (uint64_t spin = 1;; ++spin) {
    MPI_CHECK(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
    if (done) {
      g_wait.active.store(false, std::memory_order_release);
      return;
    }
    if (patient || (spin & 255) == 0) {
      const double waited = wait_age_s();
      if (waited > timeout_s_) fail_timeout(requests, n, peers, what, waited);
      // Waiting long (a peer far behind, a slow link): the core goes to whatever shares it (other ranks, the
      // kernel's TCP work), and a rank under a CPU quota spends its quota on its own work, not on waiting.
      patient = waited > 1e-3;
      if (patient) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

void MpiComm::fail_timeout(const MPI_Request* requests, int n, const int* peers, const char* what,
                           double waited_s) {
  g_wait.active.store(false, std::memory_order_release);
  log::rank_line(timeout_line(*this, what, pending_peers(*this, requests, n, peers), waited_s));
  abort_all(1);
}

MpiComm::~MpiComm() {
  liveness_.reset();
  watchdog_.reset();
  if (g_comm == this) {
    sigaction(SIGTERM, &g_previous_term, nullptr);
    sigaction(SIGINT, &g_previous_int, nullptr);
    interrupt::set_rank_reporting("", nullptr);
    g_comm = nullptr;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::unique_ptr<Request> MpiComm::start_exchange(const std::vector<Message>& sends,
                                                 const std::vector<Message>& receives, kernels::Stream) {
  auto request = std::make_unique<MpiRequest>();
  request->what = "the halo exchange";
  request->requests.reserve(sends.size() + receives.size());
  request->peers.reserve(sends.size() + receives.size());
  // Receives first, so that eager sends find a posted buffer.
  for (const Message& m : receives) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_, "peer %d", m.peer);
    post_chunked(m, [&](float* data, int count) {
      MPI_Request r;
      MPI_CHECK(MPI_Irecv(data, count, MPI_FLOAT, m.peer, kHaloTag, comm_, &r));
      request->requests.push_back(r);
      request->peers.push_back(m.peer);
    });
  }
  for (const Message& m : sends) {
    HALOGEN_ASSERT(m.peer != rank_ && m.peer >= 0 && m.peer < size_, "peer %d", m.peer);
    post_chunked(m, [&](float* data, int count) {
      MPI_Request r;
      MPI_CHECK(MPI_Isend(data, count, MPI_FLOAT, m.peer, kHaloTag, comm_, &r));
      request->requests.push_back(r);
      request->peers.push_back(m.peer);
    });
  }
  return request;
}

void MpiComm::wait(std::unique_ptr<Request> request, kernels::Stream) {
  auto* mpi_request = dynamic_cast<MpiRequest*>(request.get());
  HALOGEN_ASSERT(mpi_request != nullptr, "request from another communicator");
  wait_all(mpi_request->requests.data(), static_cast<int>(mpi_request->requests.size()),
           mpi_request->peers.data(), mpi_request->what);
}

void MpiComm::allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) {
  wait(start_allreduce_sum(data, count, compute_stream), compute_stream);
}

std::unique_ptr<Request> MpiComm::start_allreduce_sum(float* data, int64_t count, kernels::Stream) {
  HALOGEN_ASSERT(count >= 0);
  auto request = std::make_unique<MpiRequest>();
  request->what = "a gradient allreduce";
  for (int64_t offset = 0; offset < count; offset += INT_MAX) {
    const int chunk = static_cast<int>(std::min<int64_t>(count - offset, INT_MAX));
    MPI_Request r;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data + offset, chunk, MPI_FLOAT, MPI_SUM, comm_, &r));
    request->requests.push_back(r);
    request->peers.push_back(-1);
  }
  return request;
}

void MpiComm::progress(Request& request) {
  auto* mpi_request = dynamic_cast<MpiRequest*>(&request);
  HALOGEN_ASSERT(mpi_request != nullptr, "request from another communicator");
  if (mpi_request->requests.empty()) return;
  // Completed requests become MPI_REQUEST_NULL, which the final wait accepts.
  int done = 0;
  MPI_CHECK(MPI_Testall(static_cast<int>(mpi_request->requests.size()), mpi_request->requests.data(), &done,
                        MPI_STATUSES_IGNORE));
}

void MpiComm::allreduce_sum(double* data, int64_t count) {
  MPI_Request r;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_SUM, comm_, &r));
  wait_all(&r, 1, nullptr, "an allreduce");
}

void MpiComm::allreduce_sum(int64_t* data, int64_t count) {
  MPI_Request r;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_INT64_T, MPI_SUM, comm_, &r));
  wait_all(&r, 1, nullptr, "an allreduce");
}

void MpiComm::allreduce_max(double* data, int64_t count) {
  MPI_Request r;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_DOUBLE, MPI_MAX, comm_, &r));
  wait_all(&r, 1, nullptr, "an allreduce");
}

void MpiComm::barrier() {
  MPI_Request r;
  MPI_CHECK(MPI_Ibarrier(comm_, &r));
  wait_all(&r, 1, nullptr, "a barrier");
}

void MpiComm::abort(int exit_code) { abort_all(exit_code); }

}  // namespace halogen::comm
