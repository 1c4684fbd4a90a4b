#pragma once
// Streaming line reader for text inputs, plain or gzip (zlib detects which), in bounded memory: a 1 MiB
// buffer, one line at a time. Errors carry "FILE: line N: ..." so the user can find the bad input.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace halogen::io {

class LineReader {
 public:
  explicit LineReader(const std::string& path);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Next line without its '\n' (and '\r'); false at a clean end of input. UserError on a truncated or
  // corrupt gzip stream, naming the file and the last complete line.
  bool next(std::string_view* line);
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // Compressed bytes consumed so far and the file size, for progress.
  int64_t bytes_read() const;
  int64_t file_size() const { return file_size_; }

  // "FILE: line N: " prefix for error messages.
  std::string where() const;

 private:
  bool refill();

  std::string path_;
  void* gz_ = nullptr;  // gzFile
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t file_size_ = 0;
  std::string long_line_;  // a line longer than the buffer is assembled here
};

// Splits `line` at `separator` (',' for CSV) or, when separator == ' ', at runs of spaces/tabs (leading and
// trailing blanks ignored). Reuses `tokens`.
void split_tokens(std::string_view line, char separator, std::vector<std::string_view>* tokens);

// Whole-token numeric parsing (surrounding blanks allowed); otherwise a UserError
// "FILE: line N: column C: 'tok' is not an integer". The message is only built on failure.
int64_t parse_int64(std::string_view token, const LineReader& reader, size_t column);
float parse_float(std::string_view token, const LineReader& reader, size_t column);
double parse_double(std::string_view token, const LineReader& reader, size_t column);

}  // namespace halogen::io
