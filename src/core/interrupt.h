#pragma once
// Signals are not bad input (issue 31): single-process commands (convert, generate, partition without MPI)
// end on SIGTERM, SIGINT or SIGHUP with one line `halogen CMD: interrupted by SIGTERM during PHASE` and exit
// status 128 + signal, after removing the job's temporaries and lock files.
//
// How: an interrupt::Guard, made first thing in the command, installs a handler for the three signals that
// only writes the signal's number to a pipe; a thread of the guard reads it, removes what track() holds,
// prints the line and _exits. The handler runs in whichever thread the kernel picks (libraries start threads
// of their own before main). A library that installs its own handlers around a call (METIS's GKlib catches
// SIGTERM and returns METIS_ERROR, which was reported as a bad graph) must call reinstall() once it has:
// partition/metis_assign.cpp does so from GKlib's gk_sigtrap, and lets GKlib's own raise(SIGTERM) (its error
// exit) through to GKlib via set_forward. Commands under MPI (train, predict, partition --method ptscotch)
// have comm::MpiComm's handler instead.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace halogen::interrupt {

class Guard {
 public:
  explicit Guard(std::string command);  // e.g. "partition"
  ~Guard();                             // stops waiting and restores the previous handlers
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  void wait_loop();
  std::string command_;
  std::atomic<bool> stop_{false};
  std::thread waiter_;
};

// What the job is doing, for the line (e.g. "read graph", "partition", "write shards"). Any thread.
void set_phase(const std::string& phase);
std::string phase();

// Paths removed (recursively, errors ignored) before an interrupted job exits: temporaries and lock files
// that the job holds. track() returns a handle for untrack(); both are thread-safe.
int64_t track(const std::string& path);
void untrack(int64_t handle);

// Installs the guard's handlers again when a guard is active (after a library replaced them); async-safe.
void reinstall();
// A signal the process sends itself (raise) goes to `forward` while it is set, instead of ending the job:
// GKlib reports its own errors that way. nullptr: none.
void set_forward(void (*forward)(int));

}  // namespace halogen::interrupt
