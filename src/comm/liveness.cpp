#include "comm/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "comm/mpi_session.h"
#include "core/check.h"
#include "core/format.h"
#include "core/log.h"

namespace halogen::comm {
namespace {

// What rank 0 broadcasts: the job token, its port (0: liveness off) and up to kMaxAddresses IPv4 addresses of
// its interfaces (network byte order).
constexpr int kMaxAddresses = 8;
struct RootInfo {
  uint64_t token;
  uint32_t port;
  uint32_t count;
  uint32_t addresses[kMaxAddresses];
};
// What a rank sends after connecting: the token and its rank. Rank 0 answers 'K'.
struct Hello {
  uint64_t token;
  int32_t rank;
  int32_t pad;
};
constexpr double kConnectSeconds = 1.0;    // per address tried
constexpr int kHandshakeMs = 3000;         // hello and its answer
constexpr int kAbortGraceMs = 10000;       // after a peer's 'A': how long MPI_Abort may take to end this rank

// announce_end's view of the live instance: the fds to write 'A' to.
std::atomic<const int*> g_fds{nullptr};
std::atomic<int> g_fd_count{0};
std::atomic<bool> g_leader_ended{false};  // rank 0's 'A' seen (leader_announced_end)

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Reads exactly n bytes within timeout_ms (the socket is blocking; poll bounds each wait).
bool read_all(int fd, void* data, size_t n, int timeout_ms) {
  char* p = static_cast<char*>(data);
  const double deadline = now_s() + timeout_ms * 1e-3;
  while (n > 0) {
    const int left = static_cast<int>((deadline - now_s()) * 1e3);
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// A TCP connection to address:port within kConnectSeconds, or -1.
int connect_to(uint32_t address, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = address;
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to));
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd pfd{fd, POLLOUT, 0};
    if (::poll(&pfd, 1, static_cast<int>(kConnectSeconds * 1e3)) == 1) {
      int error = 0;
      socklen_t length = sizeof(error);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0) rc = 0;
    }
  }
  if (rc != 0) {
    ::close(fd);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// This host's IPv4 interface addresses, loopback last.
std::vector<uint32_t> interface_addresses() {
  std::vector<uint32_t> found, loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return found;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_UP) == 0) continue;
    const uint32_t address = reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr;
    ((a->ifa_flags & IFF_LOOPBACK) != 0 ? loopback : found).push_back(address);
  }
  ::freeifaddrs(list);
  found.insert(found.end(), loopback.begin(), loopback.end());
  return found;
}

// The IPv4 addresses `host` resolves to here.
std::vector<uint32_t> resolve(const std::string& host) {
  std::vector<uint32_t> found;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &list) != 0) return found;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next)
    found.push_back(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
  ::freeaddrinfo(list);
  return found;
}

bool liveness_disabled() {
  const char* text = std::getenv("HALOGEN_PEER_LIVENESS");
  return text != nullptr && std::strcmp(text, "0") == 0;
}

}  // namespace

void PeerLiveness::announce_end() {
  const int* fds = g_fds.load(std::memory_order_acquire);
  const int count = g_fd_count.load(std::memory_order_acquire);
  if (fds == nullptr) return;
  for (int i = 0; i < count; ++i)
    if (fds[i] >= 0) {
      const ssize_t ignored = ::send(fds[i], "A", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)ignored;
    }
}

PeerLiveness::PeerLiveness(MPI_Comm comm, std::vector<std::string> hosts) : comm_(comm), hosts_(std::move(hosts)) {
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  if (size_ < 2) return;
  // Every rank takes the same decision (an environment variable may differ between hosts): rank 0's counts.
  RootInfo info{};
  std::vector<char> bytes(sizeof(RootInfo), 0);
  const bool can = !liveness_disabled() && ::pipe2(wake_, O_CLOEXEC) == 0;
  if (rank_ == 0 && can) setup_root(bytes);  // fills `bytes` and starts the accepting thread; else port 0
  MPI_CHECK(MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_CHAR, 0, comm_));
  std::memcpy(&info, bytes.data(), sizeof(info));
  token_ = info.token;
  int ok = can && info.port != 0 ? 1 : 0;
  if (ok && rank_ != 0) ok = setup_leaf(bytes) ? 1 : 0;
  int all_ok = 0;
  MPI_CHECK(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm_));
  if (rank_ == 0 && all_ok && accepted_.load(std::memory_order_acquire) != size_ - 1) all_ok = 0;  // cannot be
  if (!all_ok) {
    if (info.port != 0) log::debug("peer liveness off: a rank could not reach rank 0 over TCP");
    if (thread_.joinable()) {
      const ssize_t ignored = ::write(wake_[1], "s", 1);
      (void)ignored;
      thread_.join();
    }
    for (Peer& peer : peers_) close_fd(peer.fd);
    peers_.clear();
    close_fd(listen_fd_);
    close_fd(wake_[0]);
    close_fd(wake_[1]);
    return;
  }
  active_.store(true, std::memory_order_release);
  publish_fds();
  if (rank_ != 0) thread_ = std::thread([this] { run(); });
}

void PeerLiveness::setup_root(std::vector<char>& bytes) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return;
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  any.sin_port = 0;
  socklen_t length = sizeof(any);
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&any), sizeof(any)) != 0 ||
      ::listen(listen_fd_, std::min(size_, 4096)) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&any), &length) != 0) {
    close_fd(listen_fd_);
    return;
  }
  RootInfo info{};
  std::random_device entropy;
  info.token = (static_cast<uint64_t>(entropy()) << 32) ^ entropy() ^ static_cast<uint64_t>(::getpid());
  info.port = ntohs(any.sin_port);
  const std::vector<uint32_t> addresses = interface_addresses();
  info.count = static_cast<uint32_t>(std::min<size_t>(addresses.size(), kMaxAddresses));
  std::copy_n(addresses.begin(), info.count, info.addresses);
  token_ = info.token;
  peers_.assign(static_cast<size_t>(size_ - 1), Peer{});
  std::memcpy(bytes.data(), &info, sizeof(info));
  thread_ = std::thread([this] { run(); });
}

bool PeerLiveness::setup_leaf(const std::vector<char>& bytes) {
  RootInfo info{};
  std::memcpy(&info, bytes.data(), sizeof(info));
  // Where rank 0 might be: loopback on the same host, its host name as resolved here, its interfaces.
  std::vector<uint32_t> candidates;
  if (hosts_[0] == hosts_[static_cast<size_t>(rank_)]) candidates.push_back(htonl(INADDR_LOOPBACK));
  for (uint32_t a : resolve(hosts_[0])) candidates.push_back(a);
  for (uint32_t i = 0; i < std::min<uint32_t>(info.count, kMaxAddresses); ++i) {
    const uint32_t a = info.addresses[i];
    const bool loopback = (ntohl(a) >> 24) == 127;
    if (loopback && hosts_[0] != hosts_[static_cast<size_t>(rank_)]) continue;
    candidates.push_back(a);
  }
  std::vector<uint32_t> tried;
  for (uint32_t a : candidates) {
    if (std::find(tried.begin(), tried.end(), a) != tried.end()) continue;
    tried.push_back(a);
    if (tried.size() > 2 * kMaxAddresses) break;
    int fd = connect_to(a, static_cast<uint16_t>(info.port));
    if (fd < 0) continue;
    const Hello hello{info.token, rank_, 0};
    char answer = 0;
    if (write_all(fd, &hello, sizeof(hello)) && read_all(fd, &answer, 1, kHandshakeMs) && answer == 'K') {
      peers_.push_back(Peer{fd, 0, false});
      return true;
    }
    ::close(fd);
  }
  return false;
}

void PeerLiveness::publish_fds() {
  announce_fds_.clear();
  for (const Peer& peer : peers_) announce_fds_.push_back(peer.fd);
  g_fd_count.store(static_cast<int>(announce_fds_.size()), std::memory_order_release);
  g_fds.store(announce_fds_.data(), std::memory_order_release);
}

void PeerLiveness::lost(int rank) {
  const std::string line = strformat(
      "error: lost rank %d (%s): its process ended without saying goodbye (it was killed, crashed, or every "
      "process of its host ended); ending the job",
      rank, hosts_.at(static_cast<size_t>(rank)).c_str());
  if (rank_ == 0) {
    log::rank_line(line);
    for (const Peer& peer : peers_)
      if (!peer.ended && peer.rank != rank) {
        const ssize_t ignored = ::send(peer.fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
      }
  } else if (rank_ == 1) {  // rank 0 lost: the lowest other rank speaks for the job
    log::rank_line(line);
  }
  abort_all_from_any_thread(1);
}

void PeerLiveness::run() {
  std::vector<pollfd> fds;
  std::vector<Peer*> owners;  // per fds entry after the wake pipe (and the listening socket): the peer
  double abort_seen = -1;     // when a peer announced an abort
  int aborting_rank = -1;
  for (;;) {
    fds.clear();
    owners.clear();
    fds.push_back(pollfd{wake_[0], POLLIN, 0});
    const bool accepting = listen_fd_ >= 0;
    if (accepting) fds.push_back(pollfd{listen_fd_, POLLIN, 0});
    const int accepted = rank_ == 0 ? accepted_.load(std::memory_order_acquire) : 1;
    for (int i = 0; i < accepted; ++i) {
      Peer& peer = peers_[static_cast<size_t>(i)];
      if (peer.ended || peer.fd < 0) continue;
      fds.push_back(pollfd{peer.fd, POLLIN, 0});
      owners.push_back(&peer);
    }
    int timeout_ms = -1;
    if (abort_seen >= 0) timeout_ms = std::max(0, static_cast<int>((abort_seen + kAbortGraceMs * 1e-3 - now_s()) * 1e3));
    const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && abort_seen >= 0) {
      log::rank_line(strformat("error: rank %d (%s) aborted the job %d s ago and this rank still runs; ending it",
                               aborting_rank, hosts_.at(static_cast<size_t>(aborting_rank)).c_str(),
                               kAbortGraceMs / 1000));
      abort_all_from_any_thread(1);
    }
    if (ready <= 0) continue;
    if (fds[0].revents != 0) return;  // stop
    size_t next = 1;
    if (accepting) {
      if (fds[1].revents != 0) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          Hello hello{};
          const int index = accepted_.load(std::memory_order_relaxed);
          if (read_all(fd, &hello, sizeof(hello), kHandshakeMs) && hello.token == token_ && hello.rank > 0 &&
              hello.rank < size_ && index < size_ - 1) {
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            peers_[static_cast<size_t>(index)] = Peer{fd, hello.rank, false};
            accepted_.store(index + 1, std::memory_order_release);
            // Unanswered, the rank that connected reports failure and the job turns liveness off.
            (void)write_all(fd, "K", 1);
            if (index + 1 == size_ - 1) close_fd(listen_fd_);
          } else {
            ::close(fd);  // not one of ours
          }
        }
      }
      next = 2;
    }
    for (size_t i = next; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Peer& peer = *owners[i - next];
      char buffer[64];
      const ssize_t r = ::recv(peer.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        if (!active_.load(std::memory_order_acquire)) {
          // During setup (rank 0): a rank gave up; the collective decision turns liveness off.
          peer.ended = true;
          continue;
        }
        lost(peer.rank);
      }
      for (ssize_t k = 0; k < r; ++k) {
        if (buffer[k] == 'B') peer.ended = true;
        if (buffer[k] == 'A') {
          peer.ended = true;
          if (peer.rank == 0) g_leader_ended.store(true, std::memory_order_release);
          if (abort_seen < 0) {
            abort_seen = now_s();
            aborting_rank = peer.rank;
          }
        }
        if (buffer[k] == 'X') abort_all_from_any_thread(1);  // rank 0 reported a lost rank and ends the job
      }
    }
  }
}

bool PeerLiveness::leader_announced_end() { return g_leader_ended.load(std::memory_order_acquire); }

PeerLiveness::~PeerLiveness() {
  if (active_.load(std::memory_order_acquire)) {
    g_fds.store(nullptr, std::memory_order_release);
    g_fd_count.store(0, std::memory_order_release);
    for (const Peer& peer : peers_)
      if (peer.fd >= 0) {
        const ssize_t ignored = ::send(peer.fd, "B", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)ignored;
      }
  }
  if (thread_.joinable()) {
    const ssize_t ignored = ::write(wake_[1], "s", 1);
    (void)ignored;
    thread_.join();
  }
  for (Peer& peer : peers_) close_fd(peer.fd);
  close_fd(listen_fd_);
  close_fd(wake_[0]);
  close_fd(wake_[1]);
}

}  // namespace halogen::comm
