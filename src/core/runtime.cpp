#include "core/runtime.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace halogen {
namespace {
RankInfo g_rank_info;
AbortHandler g_abort_handler = nullptr;
}  // namespace

const RankInfo& rank_info() { return g_rank_info; }
void set_rank_info(const RankInfo& info) { g_rank_info = info; }

const std::string& host_name() {
  static const std::string name = [] {
    char buffer[256] = {0};
    if (gethostname(buffer, sizeof(buffer) - 1) != 0) return std::string("unknown-host");
    return std::string(buffer);
  }();
  return name;
}

void set_abort_handler(AbortHandler handler) { g_abort_handler = handler; }

void abort_job(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (g_abort_handler) g_abort_handler(exit_code);
  std::_Exit(exit_code);
}

std::string rank_tag() {
  return strformat("[rank %d/%d %s]", g_rank_info.rank, g_rank_info.size, host_name().c_str());
}

void fatal(const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "%s %s:%d %s\n", rank_tag().c_str(), file, line, message.c_str());
  abort_job(3);
}

}  // namespace halogen
