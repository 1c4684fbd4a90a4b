#include "io/input_file.h"

#include <filesystem>

#include "core/error.h"

namespace halogen::io {

void check_input_file(const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (std::filesystem::is_regular_file(status)) return;
  if (std::filesystem::is_directory(status))
    throw UserError(path + ": is a directory (a file is expected here)");
  if (!std::filesystem::exists(status)) throw UserError(path + ": no such file");
  throw UserError(path + ": not a regular file");
}

}  // namespace halogen::io
