#include "io/file_format.h"

#include <xxhash.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"

namespace halogen::io {

namespace {
constexpr const char kChecksumPrefix[] = "xxh3-64:";
}  // namespace

void write_format(h5::File& file, const std::string& format, int64_t version) {
  file.set_attr("format", format);
  file.set_attr("format_version", version);
}

std::string read_format(const h5::File& file) {
  if (!file.has_attr("format")) return "";
  const std::string format = file.attr_string("format");
  if (format == "halogen-checkpoint") return "halogen.checkpoint";
  if (format == "halogen-predictions") return "halogen.predictions";
  return format;
}

int64_t read_format_version(const h5::File& file) {
  if (file.has_attr("format_version")) return file.attr_int("format_version");
  if (file.has_attr("version")) return file.attr_int("version");
  return -1;
}

std::string file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open to compute its checksum");
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  HALOGEN_ASSERT(state && XXH3_64bits_reset(state.get()) == XXH_OK, "XXH3 state");
  std::vector<char> buffer(1 << 22);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const size_t got = static_cast<size_t>(in.gcount());
    if (got > 0) XXH3_64bits_update(state.get(), buffer.data(), got);
  }
  if (in.bad()) throw UserError(path + ": read error while computing its checksum");
  char text[40];
  std::snprintf(text, sizeof(text), "%s%016llx", kChecksumPrefix,
                static_cast<unsigned long long>(XXH3_64bits_digest(state.get())));
  return text;
}

bool is_current_checksum(const std::string& checksum) { return checksum.rfind(kChecksumPrefix, 0) == 0; }

std::string checksum_kind_hint(const std::string& a, const std::string& b) {
  if (is_current_checksum(a) == is_current_checksum(b)) return "";
  return " (the fnv1a64 one was recorded by an earlier Halogen, which fingerprinted files differently, so the two "
         "cannot be compared: use a partition and checkpoint made by the same version, or partition the graph "
         "again with this version, `halogen partition ... --force`, and train afresh)";
}

}  // namespace halogen::io
