#include "fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace halogen::fuzz {

const std::string& scratch_dir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    const std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/halogen-fuzz-" +
                             std::to_string(getpid());
    std::filesystem::create_directories(path);
    return path;
  }();
  // Removed when the fuzzer exits normally (its time is up); a crash keeps it beside the crashing input.
  // Registered after `dir` is made, so it runs before `dir` is destroyed.
  static const bool removed_at_exit = [] {
    std::atexit([] {
      std::error_code error;
      std::filesystem::remove_all(dir, error);
    });
    return true;
  }();
  (void)removed_at_exit;
  return dir;
}

std::string write_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

void fix_available_memory() {
  setenv("HALOGEN_MEMORY_AVAILABLE_MIB", "1024", 1);
}

}  // namespace halogen::fuzz
