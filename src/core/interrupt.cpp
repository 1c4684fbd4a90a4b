#include "core/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"

namespace halogen::interrupt {

namespace {

std::mutex g_mutex;
std::string g_phase = "startup";
std::map<int64_t, std::string> g_tracked;
int64_t g_next_handle = 1;

constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGHUP};
struct sigaction g_previous[3];
std::atomic<int> g_pipe_write{-1};                 // >= 0 while a guard is active
std::atomic<void (*)(int)> g_forward{nullptr};
std::atomic<int64_t> g_epoch{-1};
std::string g_prefix;                   // guarded by g_mutex
std::function<bool()> g_quiet;          // guarded by g_mutex

const char* signal_name(int sig) {
  switch (sig) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

// Async-signal-safe: a write(2) of one byte, or the forward of a signal the process raised itself.
void on_signal(int sig, siginfo_t* info, void*) {
  void (*forward)(int) = g_forward.load();
  if (forward != nullptr && info != nullptr && info->si_pid == getpid() &&
      (info->si_code == SI_TKILL || info->si_code == SI_USER)) {
    forward(sig);  // GKlib's gk_sigthrow: longjmps back into the METIS call that raised it
    return;
  }
  notify(sig);
}

void install(struct sigaction* previous) {
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &action, previous ? &previous[i] : nullptr);
}

int g_pipe_read = -1;

}  // namespace

bool notify(int sig) {
  const int fd = g_pipe_write.load();
  if (fd < 0) return false;
  const unsigned char byte = static_cast<unsigned char>(sig);
  const ssize_t written = ::write(fd, &byte, 1);
  (void)written;
  return true;
}

void set_phase(const std::string& phase) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_phase = phase;
  }
  // Fault injection for tests (HALOGEN_FAULT_SIGNAL_AT=PREFIX): the process sends itself SIGTERM, as scancel
  // would, when a phase starting with PREFIX begins.
  static const char* const fault = std::getenv("HALOGEN_FAULT_SIGNAL_AT");
  if (fault != nullptr && *fault != '\0' && phase.rfind(fault, 0) == 0 && g_pipe_write.load() >= 0) {
    ::kill(::getpid(), SIGTERM);
    // This thread waits for the guard's (a real signal may land a moment before the next phase begins; the
    // test names the phase exactly).
    for (int i = 0; i < 1000; ++i) ::usleep(10000);
  }
}

void set_epoch(int64_t epoch) { g_epoch.store(epoch, std::memory_order_relaxed); }

bool guarded() { return g_pipe_write.load() >= 0; }

void set_rank_reporting(std::string prefix, std::function<bool()> quiet) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_prefix = std::move(prefix);
  g_quiet = std::move(quiet);
}

std::string phase() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  const int64_t epoch = g_epoch.load(std::memory_order_relaxed);
  return epoch >= 0 ? g_phase + ", epoch " + std::to_string(epoch) : g_phase;
}

int64_t track(const std::string& path) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_tracked.emplace(g_next_handle, path);
  return g_next_handle++;
}

void untrack(int64_t handle) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_tracked.erase(handle);
}

void reinstall() {
  if (g_pipe_write.load() >= 0) install(nullptr);
}

void set_forward(void (*forward)(int)) { g_forward = forward; }

Guard::Guard(std::string command) : command_(std::move(command)) {
  int fds[2];
  HALOGEN_ASSERT(g_pipe_write.load() < 0, "one interrupt::Guard at a time");
  HALOGEN_ASSERT(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0, "pipe2 failed");
  g_pipe_read = fds[0];
  g_pipe_write = fds[1];
  set_phase("startup");
  install(g_previous);
  waiter_ = std::thread([this] { wait_loop(); });
}

Guard::~Guard() {
  stop_ = true;
  waiter_.join();
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  set_rank_reporting("", nullptr);
  g_epoch = -1;
  const int write_end = g_pipe_write.exchange(-1);
  ::close(write_end);
  ::close(g_pipe_read);
  g_pipe_read = -1;
}

void Guard::wait_loop() {
  while (!stop_) {
    pollfd p{g_pipe_read, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;  // 50 ms: how long the guard's end may wait for this thread
    unsigned char byte = 0;
    if (::read(g_pipe_read, &byte, 1) != 1) continue;
    const int sig = byte;
    // Whether another rank reports for the job: asked first, without the lock (it may wait a moment, while
    // the job goes on and may track new temporaries), so that the removal, the line and the exit follow at once.
    std::function<bool()> quiet;
    {
      const std::lock_guard<std::mutex> lock(g_mutex);
      quiet = g_quiet;
    }
    const bool print = !quiet || !quiet();
    const std::lock_guard<std::mutex> lock(g_mutex);  // held to the end: no new temporary is tracked after this
    for (const auto& [handle, path] : g_tracked) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    const int64_t epoch = g_epoch.load(std::memory_order_relaxed);
    const std::string line = g_prefix + "halogen " + command_ + ": interrupted by " + signal_name(sig) +
                             " during " + g_phase + (epoch >= 0 ? ", epoch " + std::to_string(epoch) : "") + "\n";
    std::fflush(stdout);  // what the job printed so far comes first
    if (print) {
      const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
      (void)written;
    }
    ::_exit(128 + sig);
  }
}

}  // namespace halogen::interrupt
