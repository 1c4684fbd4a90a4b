#pragma once
// Process-wide facts every module may need without depending on MPI: this process's rank, the job size, the
// host name, and how to abort the whole job. The comm module installs the MPI abort at startup; before that
// (or in a serial tool) aborting ends this process only.
#include <string>

namespace halogen {

struct RankInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // rank among the processes of this node
};

const RankInfo& rank_info();
void set_rank_info(const RankInfo& info);
const std::string& host_name();

// Called by fatal() after printing; must not return. Default: std::abort().
using AbortHandler = void (*)(int exit_code);
void set_abort_handler(AbortHandler handler);
[[noreturn]] void abort_job(int exit_code);

// "[rank r/P host]" as used by fatal() and per-rank log lines.
std::string rank_tag();

}  // namespace halogen
