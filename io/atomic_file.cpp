#include "io/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "core/error.h"

namespace halogen::io {

AtomicOutput::AtomicOutput(std::string final_path) : final_path_(std::move(final_path)) {
  namespace fs = std::filesystem;
  const fs::path target(final_path_);
  std::error_code ec;
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw UserError(final_path_ + ": directory " + dir.string() + " does not exist");
  if (fs::is_directory(target, ec)) throw UserError(final_path_ + ": is a directory");
  temp_path_ = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(getpid()))).string();
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) std::remove(temp_path_.c_str());
}

void AtomicOutput::commit() {
  std::error_code ec;
  std::filesystem::rename(temp_path_, final_path_, ec);
  if (ec) throw UserError(final_path_ + ": cannot move the finished file into place: " + ec.message());
  committed_ = true;
}

}  // namespace halogen::io
