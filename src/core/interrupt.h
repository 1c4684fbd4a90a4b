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
// exit) through to GKlib via set_forward.
//
// train and predict make a guard too. In a job of several ranks comm::MpiComm then installs its own handler
// for SIGTERM/SIGINT (it tells the peers that this rank ends on purpose), which hands the signal on through
// notify(); set_rank_reporting gives the line its rank prefix and lets only one rank of a job that was
// signalled as a whole (scancel, mpirun's Ctrl-C) print it. partition --method ptscotch (no MpiComm) lets only
// process 0 print.
#include <atomic>
#include <cstdint>
#include <functional>
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

// What the job is doing, for the line (e.g. "read graph", "partition", "write shards"). Any thread. Tests:
// HALOGEN_FAULT_SIGNAL_AT=PREFIX makes a guarded process send itself SIGTERM when a phase with that prefix begins.
void set_phase(const std::string& phase);
std::string phase();
// The epoch a training job is in, added to the phase ("training, epoch 12") until set to -1 again. Lock-free
// and allocation-free (the training loop calls it).
void set_epoch(int64_t epoch);
// Whether a guard is active (the phase then is what the job is doing).
bool guarded();

// Async-signal-safe: hands `sig` to the active guard and returns true, or returns false when there is none.
bool notify(int sig);

// For a rank of a job of several (comm::MpiComm sets it): `prefix` starts the line ("[1/4] "), and
// `quiet`, called by the guard's thread before it prints (it may wait a moment), returns true when another
// rank reports for the job. Empty prefix and no function: a single process.
void set_rank_reporting(std::string prefix, std::function<bool()> quiet);

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
