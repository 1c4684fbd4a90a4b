#pragma once
// Memory planned before allocation: what this process may still allocate, and the checks that turn a size
// declared by an input (a header, a count file, a command-line width) into one clear UserError before a
// vector of that size is made (rather than std::bad_alloc, a 6 GB peak or the OOM killer).
#include <cstdint>
#include <string>

namespace halogen {

// Bytes this process can still allocate: MemAvailable of /proc/meminfo, lowered to the cgroup's limit minus
// its usage (cgroup v2 memory.max/memory.current, else v1 memory.limit_in_bytes/usage_in_bytes) when one is
// set. HALOGEN_MEMORY_AVAILABLE_MIB (a whole number of MiB; anything else is a UserError) replaces the
// measurement (tests; a job sharing its node).
// -1 when nothing can be read (not Linux): callers then skip their check.
int64_t available_memory_bytes();

// What this process may still allocate under its own limits (RLIMIT_AS: `ulimit -v`, RLIMIT_DATA: `ulimit -d`,
// which schedulers set), whatever the node has free: the smaller headroom, the limit and what is in use
// (VmSize or VmData of /proc/self/status). bytes = -1 when neither limit is set.
struct ProcessRoom {
  int64_t bytes = -1, limit_bytes = -1, used_bytes = 0;
  const char* limit_name = "";
};
ProcessRoom process_room();

// UserError "<what> needs X MiB, but this process may allocate only Y MiB more under its address-space limit
// (ulimit -v) (...)" when bytes exceeds process_room().bytes. For figures of this one process (a rank's plan).
void check_process_memory_fits(int64_t bytes, const std::string& what, const std::string& hint = "");

// check_process_memory_fits, then UserError "<what> needs X MiB, but only Y MiB of memory is available
// (<hint>)" when bytes exceeds available_memory_bytes(). `hint` may be empty.
void check_memory_fits(int64_t bytes, const std::string& what, const std::string& hint = "");

// The last memory plan checked in this process (check_memory_fits and check_process_memory_fits note theirs:
// "training ... per rank needs 945.8 MiB"), or a note of why none was (`--ignore-memory-check`), for the line
// of an allocation that fails anyway.
void note_memory_plan(const std::string& text);
// Notes that a command skipped its check (`how`: "--ignore-memory-check") of a plan of `bytes` per process
// (-1: not computed), for the same line.
void note_memory_check_skipped(const std::string& how, int64_t bytes);
// The one line for std::bad_alloc: "out of memory during PHASE: an allocation failed although the memory plan
// fitted (PLAN); ..." (PHASE when an interrupt::Guard names it; without a plan, says that none was checked).
std::string out_of_memory_message();

// bytes * count with saturation at INT64_MAX (declared sizes may be absurd; their product must not wrap).
int64_t saturating_bytes(int64_t count, int64_t bytes_each);

}  // namespace halogen
