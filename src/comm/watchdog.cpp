#include "comm/watchdog.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/format.h"

namespace halogen::comm {

std::string watchdog_verdict(const std::string& async_error, double oldest_age_s, double timeout_s) {
  if (!async_error.empty()) return "asynchronous communicator error: " + async_error;
  if (oldest_age_s > timeout_s)
    return strformat(
        "an operation has been in flight for %.0f s, more than the %.0f s timeout (a peer failed or "
        "stopped; --comm-timeout or HALOGEN_COMM_TIMEOUT sets the limit)",
        oldest_age_s, timeout_s);
  return {};
}

CommWatchdog::CommWatchdog(WatchdogSource& source, double timeout_s, double poll_s)
    : source_(source), timeout_s_(timeout_s), poll_s_(poll_s) {
  HALOGEN_ASSERT(timeout_s > 0 && poll_s > 0);
  thread_ = std::thread([this] { run(); });
}

CommWatchdog::~CommWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CommWatchdog::run() {
  const auto interval = std::chrono::duration<double>(poll_s_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, interval, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();  // the source's calls may take a while (CUDA/NCCL queries); stop() must not wait for them
    const std::string reason =
        watchdog_verdict(source_.async_error(), source_.oldest_in_flight_age_s(), timeout_s_);
    if (!reason.empty()) {
      failed_.store(true);
      source_.fail(reason);
      return;
    }
    lock.lock();
  }
}

namespace {
double g_timeout_override = 0;  // set_comm_timeout_seconds; 0: none
}  // namespace

void set_comm_timeout_seconds(double seconds) {
  HALOGEN_ASSERT(std::isfinite(seconds) && seconds > 0);
  g_timeout_override = seconds;
}

double comm_timeout_seconds() {
  if (g_timeout_override > 0) return g_timeout_override;
  const char* text = std::getenv("HALOGEN_COMM_TIMEOUT");
  if (text == nullptr || *text == '\0') return 600.0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  HALOGEN_USER_CHECK(end != text && *end == '\0' && std::isfinite(value) && value > 0,
                     "HALOGEN_COMM_TIMEOUT=%s: expected a positive number of seconds", text);
  return value;
}

}  // namespace halogen::comm
