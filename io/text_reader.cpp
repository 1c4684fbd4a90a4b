#include "io/text_reader.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "io/input_file.h"

namespace halogen::io {

namespace {
constexpr size_t kBufferBytes = 1 << 20;
gzFile as_gz(void* p) {
  return static_cast<gzFile>(p);
}
}  // namespace

LineReader::LineReader(const std::string& path) : path_(path) {
  check_input_file(path);
  std::error_code ec;
  file_size_ = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  // Small files (split lists, counts) get a small buffer; a longer line than the buffer is still handled.
  buffer_.resize(std::clamp<size_t>(static_cast<size_t>(file_size_) * 8, 1 << 16, kBufferBytes));
  gz_ = gzopen(path.c_str(), "rb");
  if (!gz_) throw UserError(path + ": cannot open for reading");
  gzbuffer(as_gz(gz_), 1 << 17);
}

LineReader::~LineReader() {
  if (gz_) gzclose(as_gz(gz_));
}

int64_t LineReader::bytes_read() const {
  return gz_ ? static_cast<int64_t>(gzoffset(as_gz(gz_))) : 0;
}

std::string LineReader::where() const {
  return path_ + ": line " + std::to_string(line_number_) + ": ";
}

bool LineReader::refill() {
  if (eof_) return false;
  // Keep the unconsumed tail at the front.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const int got = gzread(as_gz(gz_), buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
  int error = Z_OK;
  const char* message = gzerror(as_gz(gz_), &error);
  if (got < 0 || (error != Z_OK && error != Z_STREAM_END)) {
    // zlib's message starts with the path; keep only what follows it.
    std::string reason = message && *message ? message : "zlib error";
    if (reason.compare(0, path_.size() + 2, path_ + ": ") == 0) reason.erase(0, path_.size() + 2);
    throw UserError(strformat("%s: corrupt or truncated gzip data (%s) in the block after line %lld",
                              path_.c_str(), reason.c_str(), static_cast<long long>(line_number_)));
  }
  if (got == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<size_t>(got);
  return true;
}

bool LineReader::next(std::string_view* line) {
  long_line_.clear();
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* newline = std::memchr(start, '\n', end_ - begin_);
    if (newline) {
      const size_t length = static_cast<const char*>(newline) - start;
      begin_ += length + 1;
      ++line_number_;
      if (!long_line_.empty()) {
        long_line_.append(start, length);
        *line = long_line_;
      } else {
        *line = std::string_view(start, length);
      }
      if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
      return true;
    }
    if (begin_ == 0 && end_ == buffer_.size()) {  // a line longer than the buffer
      long_line_.append(buffer_.data(), end_);
      begin_ = end_ = 0;
    }
    if (!refill()) {
      if (end_ > begin_ || !long_line_.empty()) {  // last line without '\n'
        long_line_.append(buffer_.data() + begin_, end_ - begin_);
        begin_ = end_;
        ++line_number_;
        *line = long_line_;
        if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
        return true;
      }
      return false;
    }
  }
}

void split_tokens(std::string_view line, char separator, std::vector<std::string_view>* tokens) {
  tokens->clear();
  if (separator == ' ') {
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i == line.size()) break;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      tokens->push_back(line.substr(i, j - i));
      i = j;
    }
    return;
  }
  size_t start = 0;
  for (;;) {
    const size_t comma = line.find(separator, start);
    if (comma == std::string_view::npos) {
      tokens->push_back(line.substr(start));
      return;
    }
    tokens->push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

namespace {
std::string_view trim(std::string_view token) {
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  return token;
}

template <typename T>
T parse_number(std::string_view token, const LineReader& reader, size_t column, const char* what) {
  token = trim(token);
  T value{};
  const char* first = token.data();
  const char* last = token.data() + token.size();
  if (!token.empty() && token.front() == '+') ++first;
  const auto [end, error] = std::from_chars(first, last, value);
  if (token.empty() || error != std::errc() || end != last) {
    // At most 40 characters, bytes outside printable ASCII as \xNN (a flipped bit must not reach the terminal).
    std::string shown;
    for (const char c : token.substr(0, 40)) {
      const auto byte = static_cast<unsigned char>(c);
      shown += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : strformat("\\x%02x", byte);
    }
    throw UserError(
        strformat("%scolumn %zu: '%s' is not %s", reader.where().c_str(), column + 1, shown.c_str(), what));
  }
  return value;
}
}  // namespace

int64_t parse_int64(std::string_view token, const LineReader& reader, size_t column) {
  return parse_number<int64_t>(token, reader, column, "an integer");
}

float parse_float(std::string_view token, const LineReader& reader, size_t column) {
  return parse_number<float>(token, reader, column, "a number");
}

double parse_double(std::string_view token, const LineReader& reader, size_t column) {
  return parse_number<double>(token, reader, column, "a number");
}

}  // namespace halogen::io
