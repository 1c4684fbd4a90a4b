#include "core/log.h"

#include <unistd.h>

#include <cstdio>

#include "core/runtime.h"
#include "core/timer.h"

namespace halogen::log {
namespace {
Level g_level = Level::info;
}

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }

void info(const std::string& line) {
  if (rank_info().rank != 0 || g_level < Level::info) return;
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
}

void warn(const std::string& line) {
  if (rank_info().rank != 0) return;
  std::fprintf(stderr, "warning: %s\n", line.c_str());
}

void debug(const std::string& line) {
  if (rank_info().rank != 0 || g_level < Level::debug) return;
  std::fprintf(stderr, "%s\n", line.c_str());
}

void rank_line(const std::string& line) {
  std::fprintf(stderr, "[%d/%d] %s\n", rank_info().rank, rank_info().size, line.c_str());
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), active_(stderr_is_terminal() && rank_info().rank == 0) {}

Progress::~Progress() { finish(); }

void Progress::update(int64_t done) {
  if (!active_ || finished_) return;
  const double now = wall_seconds();
  if (last_draw_ >= 0 && now - last_draw_ < 0.2) return;
  last_draw_ = now;
  if (total_ > 0) {
    std::fprintf(stderr, "\r%s %5.1f%% (%lld/%lld)", label_.c_str(), 100.0 * done / total_,
                 static_cast<long long>(done), static_cast<long long>(total_));
  } else {
    std::fprintf(stderr, "\r%s %lld", label_.c_str(), static_cast<long long>(done));
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (!active_ || finished_) return;
  finished_ = true;
  if (last_draw_ >= 0) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace halogen::log
