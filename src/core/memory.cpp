#include "core/memory.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>

#include <sys/resource.h>

#include "core/error.h"
#include "core/format.h"

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

void check_process_memory_fits(int64_t bytes, const std::string& what, const std::string& hint) {
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
  check_process_memory_fits(bytes, what, hint);
  const int64_t available = available_memory_bytes();
  if (available < 0 || bytes <= available) return;
  throw UserError(strformat("%s needs %.1f MiB, but only %.1f MiB of memory is available%s%s%s", what.c_str(),
                            static_cast<double>(bytes) / 1048576.0,
                            static_cast<double>(available) / 1048576.0, hint.empty() ? "" : " (",
                            hint.c_str(), hint.empty() ? "" : ")"));
}

}  // namespace halogen
