// The device communicator's watchdog (comm/watchdog.h) on the CPU: its decisions with a fake source standing
// in for NCCL's asynchronous error and the in-flight operations, so that the logic that ends a hung GPU job
// is tested without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "comm/watchdog.h"
#include "core/error.h"

using namespace halogen;
using Clock = std::chrono::steady_clock;

namespace {

// A source whose error and oldest operation the test sets; records fail() calls.
class FakeSource final : public comm::WatchdogSource {
 public:
  std::string async_error() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  double oldest_in_flight_age_s() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!in_flight_) return -1;
    return std::chrono::duration<double>(Clock::now() - started_).count();
  }
  void fail(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mutex_);
    reason_ = reason;
    failed_at_ = Clock::now();
    ++failures_;
  }
  void set_error(const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = error;
  }
  void start_operation() {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = true;
    started_ = Clock::now();
  }
  void finish_operation() {
    std::lock_guard<std::mutex> lock(mutex_);
    in_flight_ = false;
  }
  int failures() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failures_;
  }
  std::string reason() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reason_;
  }
  Clock::time_point failed_at() {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_at_;
  }

 private:
  std::mutex mutex_;
  std::string error_, reason_;
  bool in_flight_ = false;
  Clock::time_point started_, failed_at_;
  int failures_ = 0;
};

// Waits up to `limit_s` for the source to have failed.
bool wait_for_failure(FakeSource& source, double limit_s) {
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
  while (Clock::now() < end) {
    if (source.failures() > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return source.failures() > 0;
}

}  // namespace

TEST(CommWatchdogVerdict, ErrorFailsAtOnceTimeoutOnlyAfterTheLimit) {
  EXPECT_EQ(comm::watchdog_verdict("", -1, 10), "");    // nothing in flight
  EXPECT_EQ(comm::watchdog_verdict("", 9.9, 10), "");   // in flight, within the limit
  EXPECT_EQ(comm::watchdog_verdict("", 10.0, 10), "");  // exactly the limit: not yet
  const std::string timed_out = comm::watchdog_verdict("", 11.2, 10);
  EXPECT_NE(timed_out.find("in flight for 11 s"), std::string::npos) << timed_out;
  EXPECT_NE(timed_out.find("HALOGEN_COMM_TIMEOUT"), std::string::npos) << timed_out;
  const std::string error = comm::watchdog_verdict("unhandled system error (peer closed)", -1, 10);
  EXPECT_NE(error.find("unhandled system error (peer closed)"), std::string::npos) << error;
  // An error wins over a timeout (it names the cause).
  EXPECT_NE(comm::watchdog_verdict("remote error", 99, 10).find("remote error"), std::string::npos);
}

TEST(CommWatchdog, AsyncErrorFailsWithinAPollInterval) {
  FakeSource source;
  comm::CommWatchdog watchdog(source, /*timeout_s=*/60, /*poll_s=*/0.01);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(source.failures(), 0);  // healthy: no failure
  const Clock::time_point injected = Clock::now();
  source.set_error("remote process exited or there was a network error");
  // Bound: one poll (10 ms) plus scheduling on a loaded 2-core machine; 5 s is far from both the bound and
  // the 60 s timeout, so a failure here comes from the error, not from the timeout.
  ASSERT_TRUE(wait_for_failure(source, 5.0));
  EXPECT_LT(std::chrono::duration<double>(source.failed_at() - injected).count(), 5.0);
  EXPECT_NE(source.reason().find("network error"), std::string::npos) << source.reason();
  EXPECT_TRUE(watchdog.failed());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(source.failures(), 1);  // fail() once, then the thread stops polling
}

TEST(CommWatchdog, StuckOperationFailsAfterTheTimeoutNotBefore) {
  FakeSource source;
  comm::CommWatchdog watchdog(source, /*timeout_s=*/0.3, /*poll_s=*/0.01);
  const Clock::time_point started = Clock::now();
  source.start_operation();  // never finishes: a peer that stopped
  ASSERT_TRUE(wait_for_failure(source, 10.0));
  const double waited = std::chrono::duration<double>(source.failed_at() - started).count();
  EXPECT_GT(waited, 0.3);  // not before the timeout
  EXPECT_LT(waited, 5.0);  // bounded: timeout + a poll, with a wide margin for a loaded machine
  EXPECT_NE(source.reason().find("timeout"), std::string::npos) << source.reason();
}

TEST(CommWatchdog, OperationsThatFinishNeverFail) {
  FakeSource source;
  {
    comm::CommWatchdog watchdog(source, /*timeout_s=*/0.5, /*poll_s=*/0.01);
    for (int i = 0; i < 10; ++i) {  // 10 operations of 50 ms each: 0.5 s in all, each a tenth of the timeout
      source.start_operation();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      source.finish_operation();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // idle longer than the timeout: not a hang
    EXPECT_FALSE(watchdog.failed());
  }  // the destructor stops the thread
  EXPECT_EQ(source.failures(), 0);
}

TEST(CommWatchdog, TimeoutComesFromTheEnvironment) {
  unsetenv("HALOGEN_COMM_TIMEOUT");
  EXPECT_EQ(comm::comm_timeout_seconds(), 600.0);
  setenv("HALOGEN_COMM_TIMEOUT", "2.5", 1);
  EXPECT_EQ(comm::comm_timeout_seconds(), 2.5);
  for (const char* bad : {"0", "-3", "ten", "5s", "nan"}) {
    setenv("HALOGEN_COMM_TIMEOUT", bad, 1);
    EXPECT_THROW(comm::comm_timeout_seconds(), UserError) << bad;
  }
  unsetenv("HALOGEN_COMM_TIMEOUT");
}
