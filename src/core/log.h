#pragma once
// Rank-aware logging. info()/warn() print on rank 0 only (the job's voice); rank_line() prints on every rank
// with the "[r/P]" prefix. Progress bars draw only when stderr is a terminal, so logs stay quiet.
#include <cstdint>
#include <string>

namespace halogen::log {

enum class Level { quiet = 0, info = 1, debug = 2 };
void set_level(Level level);
Level level();

void info(const std::string& line);   // rank 0, stdout
void warn(const std::string& line);   // rank 0, stderr, "warning: " prefix
void debug(const std::string& line);  // rank 0, only at Level::debug
void rank_line(const std::string& line);  // every rank, "[r/P] " prefix, stderr

bool stderr_is_terminal();

// A progress indicator for long single-process steps (convert, partition, load). Redraws at most every
// 200 ms on a terminal; prints nothing when stderr is not a terminal or on ranks other than 0.
class Progress {
 public:
  Progress(std::string label, int64_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(int64_t done);
  void finish();

 private:
  std::string label_;
  int64_t total_;
  double last_draw_ = -1.0;
  bool active_;
  bool finished_ = false;
};

}  // namespace halogen::log
