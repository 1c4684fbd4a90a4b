#include "download/unzip.h"

#include <zip.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/format.h"

namespace halogen::download {

namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

ZipPtr open_zip(const std::string& archive) {
  int error = 0;
  zip_t* z = zip_open(archive.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (z == nullptr) {
    zip_error_t e;
    zip_error_init_with_code(&e, error);
    const std::string text = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw UserError(strformat("%s: not a readable zip archive (%s)", archive.c_str(), text.c_str()));
  }
  return ZipPtr(z);
}

// A member name that stays under the extraction directory: relative, no "..", no empty name.
bool safe_member_name(const std::string& name) {
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos) return false;
  for (const auto& part : std::filesystem::path(name))
    if (part == "..") return false;
  return true;
}

}  // namespace

int64_t zip_unpacked_bytes(const std::string& archive) {
  ZipPtr z = open_zip(archive);
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  int64_t total = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE))
      total += static_cast<int64_t>(st.size);
  }
  return total;
}

std::vector<std::string> extract_zip(const std::string& archive, const std::string& directory) {
  namespace fs = std::filesystem;
  ZipPtr z = open_zip(archive);
  std::error_code ec;
  fs::create_directories(directory, ec);
  HALOGEN_USER_CHECK(!ec, "%s: cannot create (%s)", directory.c_str(), ec.message().c_str());
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  std::vector<std::string> written;
  std::vector<char> buffer(size_t{1} << 20);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* raw_name = zip_get_name(z.get(), static_cast<zip_uint64_t>(i), 0);
    HALOGEN_USER_CHECK(raw_name != nullptr, "%s: member %lld has no readable name", archive.c_str(),
                       static_cast<long long>(i));
    const std::string name = raw_name;
    HALOGEN_USER_CHECK(safe_member_name(name), "%s: member \"%s\" would be written outside %s; refused",
                       archive.c_str(), name.c_str(), directory.c_str());
    const fs::path target = fs::path(directory) / name;
    if (name.back() == '/') {
      fs::create_directories(target, ec);
      HALOGEN_USER_CHECK(!ec, "%s: cannot create (%s)", target.c_str(), ec.message().c_str());
      continue;
    }
    fs::create_directories(target.parent_path(), ec);
    HALOGEN_USER_CHECK(!ec, "%s: cannot create (%s)", target.parent_path().c_str(), ec.message().c_str());
    zip_file_t* member = zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0);
    HALOGEN_USER_CHECK(member != nullptr, "%s: %s: cannot open (%s)", archive.c_str(), name.c_str(),
                       zip_strerror(z.get()));
    FILE* out = std::fopen(target.c_str(), "wb");
    if (out == nullptr) {
      zip_fclose(member);
      throw UserError(strformat("%s: cannot create (%s)", target.c_str(), std::strerror(errno)));
    }
    std::string failure;
    for (;;) {
      const zip_int64_t got = zip_fread(member, buffer.data(), buffer.size());
      if (got < 0) {  // includes a CRC-32 mismatch at the member's end
        failure = strformat("%s: %s: %s", archive.c_str(), name.c_str(), zip_file_strerror(member));
        break;
      }
      if (got == 0) break;
      if (std::fwrite(buffer.data(), 1, static_cast<size_t>(got), out) != static_cast<size_t>(got)) {
        failure = strformat("%s: write failed (%s)", target.c_str(), std::strerror(errno));
        break;
      }
    }
    zip_fclose(member);
    if (std::fclose(out) != 0 && failure.empty())
      failure = strformat("%s: write failed (%s)", target.c_str(), std::strerror(errno));
    if (!failure.empty()) throw UserError(failure);
    written.push_back(name);
  }
  return written;
}

}  // namespace halogen::download
