#pragma once
// CommWatchdog: turns a failed or stuck device communicator into a clear error within a bounded time, instead
// of a job that hangs. NcclComm orders its work with CUDA events only, so a peer that died or stopped leaves
// the host blocked in some later cudaStreamSynchronize with no error. A watchdog thread polls, every `poll`
// seconds:
//   1. the communicator's asynchronous error (ncclCommGetAsyncError): anything but "no error" fails at once;
//   2. the oldest operation still in flight: when it has been in flight for more than `timeout` seconds,
//   fails.
// On failure it calls source.fail(reason) once (NcclComm: prints "[rank r/P] ... NCCL watchdog: <reason>",
// ncclCommAbort, then MPI_Abort of the job with exit status 1) and stops polling. Worst case from the fault
// to fail(): timeout + poll for a stuck peer, poll for an error NCCL reports.
//
// The decision logic is this class, with the communicator behind WatchdogSource, so that a CPU test drives it
// with a fake source (tests/unit/comm_watchdog_test.cpp); no CUDA or NCCL here.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace halogen::comm {

class WatchdogSource {
 public:
  virtual ~WatchdogSource() = default;
  // Non-empty: the communicator failed asynchronously (the text names the error).
  virtual std::string async_error() = 0;
  // Drops the operations that completed from the front of the in-flight queue; returns the age in seconds of
  // the oldest one still in flight, or a negative number when none is.
  virtual double oldest_in_flight_age_s() = 0;
  // Called once, from the watchdog thread, when the watchdog gives up. May end the process.
  virtual void fail(const std::string& reason) = 0;
};

// The verdict of one poll: empty = keep going; else the reason to fail. Pure (the test checks it directly).
std::string watchdog_verdict(const std::string& async_error, double oldest_age_s, double timeout_s);

class CommWatchdog {
 public:
  // Starts the polling thread. `source` must outlive the watchdog. timeout_s > 0, poll_s > 0.
  CommWatchdog(WatchdogSource& source, double timeout_s, double poll_s);
  // Stops and joins the thread (within one poll interval).
  ~CommWatchdog();
  CommWatchdog(const CommWatchdog&) = delete;
  CommWatchdog& operator=(const CommWatchdog&) = delete;

  bool failed() const { return failed_.load(); }

 private:
  void run();
  WatchdogSource& source_;
  const double timeout_s_, poll_s_;
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// The communication timeout, in seconds: how long any rank waits for one communication (a halo exchange, an
// allreduce, a barrier; MpiComm on the CPU, the NCCL watchdog on GPUs) before it ends the job. The value given
// to set_comm_timeout_seconds (`--comm-timeout` of train and predict) when set, else $HALOGEN_COMM_TIMEOUT
// when set (a positive number; anything else is a UserError naming the variable), else 600: long enough for
// NCCL's first connection setup, the largest exchange and a peer that is still reading a big shard, short
// enough that a hung job ends well within a batch slot.
double comm_timeout_seconds();
// Overrides HALOGEN_COMM_TIMEOUT for communicators made afterwards (seconds > 0).
void set_comm_timeout_seconds(double seconds);

}  // namespace halogen::comm
