#pragma once
// The tests' scratch directories: <tmp>/halogen_<suite>_<pid>, one per suite and test process, created on first
// use and removed with everything in it when the process exits (ctest runs every test in its own process, so
// without this each run left hundreds of directories behind). HALOGEN_KEEP_TEST_FILES=1 keeps them to look at.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace halogen::test {

inline std::filesystem::path test_temp_dir(const std::string& suite) {
  struct Cleanup {
    std::vector<std::filesystem::path> dirs;
    ~Cleanup() {
      const char* keep = std::getenv("HALOGEN_KEEP_TEST_FILES");
      if (keep != nullptr && std::string(keep) == "1") return;
      for (const std::filesystem::path& dir : dirs) {
        std::error_code error;  // best effort: a test that failed half-way may have left anything
        std::filesystem::remove_all(dir, error);
      }
    }
  };
  static Cleanup cleanup;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("halogen_" + suite + "_" + std::to_string(getpid()));
  if (std::find(cleanup.dirs.begin(), cleanup.dirs.end(), dir) == cleanup.dirs.end()) cleanup.dirs.push_back(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// test_temp_dir(suite)/name, emptied and created.
inline std::string fresh_temp_subdir(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir = test_temp_dir(suite) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace halogen::test
