#include "core/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
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
  const int fd = g_pipe_write.load();
  const unsigned char byte = static_cast<unsigned char>(sig);
  if (fd >= 0) {
    const ssize_t written = ::write(fd, &byte, 1);
    (void)written;
  }
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

void set_phase(const std::string& phase) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  g_phase = phase;
}

std::string phase() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_phase;
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
    const std::lock_guard<std::mutex> lock(g_mutex);  // held to the end: no new temporary is tracked after this
    for (const auto& [handle, path] : g_tracked) {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
    const std::string line =
        "halogen " + command_ + ": interrupted by " + signal_name(sig) + " during " + g_phase + "\n";
    std::fflush(stdout);  // what the job printed so far comes first
    const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
    (void)written;
    ::_exit(128 + sig);
  }
}

}  // namespace halogen::interrupt
