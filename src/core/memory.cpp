#include "core/memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <string>

#include <sys/resource.h>

#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"

namespace halogen {
namespace {

// The first integer in a file ("max" or a missing file: -1).
int64_t read_integer_file(const char* path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word.empty() || word[0] < '0' || word[0] > '9') return -1;
  return std::strtoll(word.c_str(), nullptr, 10);
}

// A "Key: N kB" line of a /proc file (/proc/meminfo, /proc/self/status) in bytes; -1 when absent.
int64_t proc_kib_field_bytes(const char* path, const std::string& field) {
  std::ifstream in(path);
  std::string key, unit;
  int64_t kib = 0;
  while (in >> key) {
    if (key == field && in >> kib >> unit) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return -1;
}

int64_t mem_available_bytes() { return proc_kib_field_bytes("/proc/meminfo", "MemAvailable:"); }

// Room left under this process's cgroup limit; -1 when there is no limit.
int64_t cgroup_room_bytes() {
  int64_t limit = read_integer_file("/sys/fs/cgroup/memory.max");
  int64_t usage = read_integer_file("/sys/fs/cgroup/memory.current");
  if (limit < 0) {
    limit = read_integer_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    usage = read_integer_file("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  }
  // v1 reports "no limit" as a number near 2^63.
  if (limit < 0 || limit >= (int64_t{1} << 60)) return -1;
  return std::max<int64_t>(0, limit - std::max<int64_t>(0, usage));
}

}  // namespace

ProcessRoom process_room() {
  ProcessRoom room;
  // RLIMIT_AS caps the address space (VmSize), RLIMIT_DATA the data segment and private mappings (VmData):
  // what `ulimit -v` / `ulimit -d` and schedulers set. The smaller headroom is what an allocation can use.
  const struct { int resource; const char* name; const char* status; } limits[] = {
      {RLIMIT_AS, "address-space limit (ulimit -v)", "VmSize:"}, {RLIMIT_DATA, "data limit (ulimit -d)", "VmData:"}};
  for (const auto& limit : limits) {
    struct rlimit value {};
    if (getrlimit(limit.resource, &value) != 0 || value.rlim_cur == RLIM_INFINITY) continue;
    const int64_t cap = value.rlim_cur > static_cast<rlim_t>(std::numeric_limits<int64_t>::max())
                            ? std::numeric_limits<int64_t>::max()
                            : static_cast<int64_t>(value.rlim_cur);
    const int64_t used = std::max<int64_t>(0, proc_kib_field_bytes("/proc/self/status", limit.status));
    const int64_t left = std::max<int64_t>(0, cap - used);
    if (room.bytes < 0 || left < room.bytes) room = ProcessRoom{left, cap, used, limit.name};
  }
  return room;
}

int64_t available_memory_bytes() {
  if (const char* forced = std::getenv("HALOGEN_MEMORY_AVAILABLE_MIB");
      forced != nullptr && *forced != '\0') {
    char* end = nullptr;
    const long long mib = std::strtoll(forced, &end, 10);
    HALOGEN_USER_CHECK(end != forced && *end == '\0' && mib >= 0,
                       "HALOGEN_MEMORY_AVAILABLE_MIB=%s: expected a whole number of MiB, 0 or more", forced);
    return saturating_bytes(mib, int64_t{1} << 20);
  }
  const int64_t available = mem_available_bytes();
  const int64_t room = cgroup_room_bytes();
  if (available < 0) return room;
  return room < 0 ? available : std::min(available, room);
}

int64_t saturating_bytes(int64_t count, int64_t bytes_each) {
  if (count <= 0 || bytes_each <= 0) return 0;
  if (count > std::numeric_limits<int64_t>::max() / bytes_each) return std::numeric_limits<int64_t>::max();
  return count * bytes_each;
}

namespace {
std::mutex g_plan_mutex;
std::string g_plan;     // note_memory_plan's text
std::string g_skipped;  // note_memory_check_skipped's

std::string mib_text(int64_t bytes) { return strformat("%.1f MiB", static_cast<double>(bytes) / 1048576.0); }
}  // namespace

void note_memory_plan(const std::string& text) {
  const std::lock_guard<std::mutex> lock(g_plan_mutex);
  g_plan = text;
}

void note_memory_check_skipped(const std::string& how, int64_t bytes) {
  const std::lock_guard<std::mutex> lock(g_plan_mutex);
  g_skipped = bytes < 0 ? how : how + "; the plan: " + mib_text(bytes) + " per rank";
}

std::string out_of_memory_message() {
  std::string plan, skipped;
  {
    const std::lock_guard<std::mutex> lock(g_plan_mutex);
    plan = g_plan;
    skipped = g_skipped;
  }
  const std::string during = interrupt::guarded() ? " during " + interrupt::phase() : "";
  const ProcessRoom room = process_room();
  const std::string limit = room.bytes < 0 ? ""
                                           : strformat("; this process is under its %s of %s", room.limit_name,
                                                       mib_text(room.limit_bytes).c_str());
  if (!skipped.empty())
    return "out of memory" + during + ": an allocation failed, and the memory check was skipped (" + skipped + ")" + limit +
           " (`halogen info` shows what the job needs)";
  if (plan.empty())
    return "out of memory" + during + ": an allocation failed, and no memory plan was checked for this step" + limit +
           " (`halogen info` shows what a command will need)";
  return "out of memory" + during + ": an allocation failed although the memory plan fitted (" + plan + ")" + limit +
         " (other processes took the memory, or the plan falls short; `halogen info` shows it)";
}

void check_process_memory_fits(int64_t bytes, const std::string& what, const std::string& hint) {
  note_memory_plan(what + " needs " + mib_text(bytes));
  const ProcessRoom room = process_room();
  if (room.bytes < 0 || bytes <= room.bytes) return;
  throw UserError(strformat("%s needs %.1f MiB, but this process may allocate only %.1f MiB more under its %s "
                            "(%.1f MiB, %.1f MiB in use)%s%s%s",
                            what.c_str(), static_cast<double>(bytes) / 1048576.0,
                            static_cast<double>(room.bytes) / 1048576.0, room.limit_name,
                            static_cast<double>(room.limit_bytes) / 1048576.0,
                            static_cast<double>(room.used_bytes) / 1048576.0, hint.empty() ? "" : " (",
                            hint.c_str(), hint.empty() ? "" : ")"));
}

void check_memory_fits(int64_t bytes, const std::string& what, const std::string& hint) {
  check_process_memory_fits(bytes, what, hint);  // notes the plan
  const int64_t available = available_memory_bytes();
  if (available < 0 || bytes <= available) return;
  throw UserError(strformat("%s needs %.1f MiB, but only %.1f MiB of memory is available%s%s%s", what.c_str(),
                            static_cast<double>(bytes) / 1048576.0,
                            static_cast<double>(available) / 1048576.0, hint.empty() ? "" : " (",
                            hint.c_str(), hint.empty() ? "" : ")"));
}

}  // namespace halogen
