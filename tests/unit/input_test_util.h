#pragma once
// Helpers for the reader and converter tests: hand-made input files in a per-process temporary directory, and
// the one-line message of the UserError a step throws.
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "core/error.h"
#include "temp_dir_util.h"

namespace halogen::test {

// Writes `text` to <tmp>/halogen_<suite>_<pid>/<name> (test_temp_dir: removed at exit) and returns the path.
inline std::string write_text_file(const std::string& suite, const std::string& name, const std::string& text) {
  const std::string path = (test_temp_dir(suite) / name).string();
  std::ofstream(path) << text;
  return path;
}

// The message of the UserError `step` throws, or "(no error)" when it returns. Any other exception escapes
// and fails the test.
inline std::string message_of(const std::function<void()>& step) {
  try {
    step();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// The whole file as bytes ("" when it cannot be opened).
inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Replaces the file's contents with `bytes`.
inline void write_all(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace halogen::test
