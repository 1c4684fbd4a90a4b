#pragma once
// NumPy .npz archives (zip files of .npy members), read member by member in bounded memory: the zip
// central directory (zip64 included) is parsed, members may be stored or deflated (inflated with zlib as
// raw deflate), and each .npy header (magic, version 1-3, dict with descr/fortran_order/shape) is parsed.
// Integrity: the zip CRC-32 of a member (from the central directory) is checked against the bytes read, .npy
// header included, when the member's last byte is read: a corrupt member stops with
// "ARCHIVE: MEMBER: CRC-32 mismatch (...)" (or, for a deflated member whose stream zlib cannot decode,
// "ARCHIVE: MEMBER: corrupt compressed data (...)"); a deflated member's stream must also end with its last
// byte. Every converter reads the members it uses to the end.
// A Fortran-ordered array of 2 or more dimensions is read whole on the first read() and transposed to C order
// (memory: the array's size once more); every other array is streamed.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace halogen::io {

struct NpyHeader {
  std::string descr;  // e.g. "<i8", "<f4"
  char kind = 0;      // 'i' signed, 'u' unsigned, 'f' float, 'b' bool
  int item_size = 0;  // bytes per element
  std::vector<int64_t> shape;
  bool fortran_order =
      false;  // column-major on disk (numpy.savez of a transposed array); read() gives C order
  int64_t count() const;
};

class NpyReader;

class NpzArchive {
 public:
  explicit NpzArchive(const std::string& path);
  const std::string& path() const { return path_; }
  // Array names (member names without ".npy").
  std::vector<std::string> names() const;
  bool has(const std::string& name) const;
  // Opens one array for streaming; UserError naming the archive and member when absent or malformed.
  std::unique_ptr<NpyReader> open(const std::string& name) const;

  struct Member {
    std::string name;
    uint16_t method = 0;  // 0 stored, 8 deflated
    uint32_t crc32 = 0;   // of the uncompressed bytes
    uint64_t compressed_size = 0, size = 0, local_header_offset = 0;
  };

 private:
  std::string path_;
  std::vector<Member> members_;
};

// Streams the elements of one .npy member, converting them to the requested type.
class NpyReader {
 public:
  NpyReader(const std::string& archive, const NpzArchive::Member& member);
  ~NpyReader();
  NpyReader(const NpyReader&) = delete;
  NpyReader& operator=(const NpyReader&) = delete;

  const NpyHeader& header() const { return header_; }
  // Next `count` elements into out (int64_t, int32_t, float or double). Integers must be stored as
  // integers (or bool); floats may come from any numeric type. UserError if fewer remain, and when this read
  // reaches the member's end and its CRC-32 differs from the archive's.
  template <typename T>
  void read(T* out, int64_t count);

 private:
  // The member's next `bytes` uncompressed bytes, CRC-checked at the member's end (read_member_bytes: unchecked).
  void read_bytes(void* out, size_t bytes);
  void read_member_bytes(void* out, size_t bytes);
  void refill_input();       // deflated: the next block of compressed bytes into input_
  void check_deflate_end();  // deflated, after the last byte: the stream ends there (UserError otherwise)
  void read_data(void* out,
                 size_t bytes);  // the array's bytes in C order (read_bytes, or the transposed copy)
  void load_fortran_array();
  void parse_header(const std::string& dict);
  void open_member(const std::string& archive, const NpzArchive::Member& member);
  void release();

  std::string where_;
  std::FILE* file_ = nullptr;
  NpzArchive::Member member_;
  void* inflater_ = nullptr;  // z_stream when deflated
  std::vector<unsigned char> input_;
  uint64_t compressed_left_ = 0, produced_ = 0;  // produced_: uncompressed bytes read so far
  uint32_t crc_ = 0;                              // CRC-32 of those bytes
  NpyHeader header_;
  std::vector<unsigned char> staging_;
  std::vector<unsigned char> c_order_;  // a Fortran-ordered array, transposed (load_fortran_array)
  size_t c_order_pos_ = 0;
};

}  // namespace halogen::io
