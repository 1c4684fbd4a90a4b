#include "io/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "core/error.h"
#include "io/input_file.h"
#include "io/numpy_dtype.h"

namespace halogen::io {

namespace {

uint16_t le16(const unsigned char* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const unsigned char* p) {
  return le16(p) | (static_cast<uint32_t>(le16(p + 2)) << 16);
}
uint64_t le64(const unsigned char* p) {
  return le32(p) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}

struct FileCloser {
  void operator()(std::FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

void read_at(std::FILE* f, uint64_t offset, void* out, size_t bytes, const std::string& path,
             const char* what) {
  if (fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fread(out, 1, bytes, f) != bytes) {
    throw UserError(path + ": truncated zip archive (cannot read the " + what + ")");
  }
}

}  // namespace

int64_t NpyHeader::count() const {
  // Saturates at INT64_MAX: a corrupt header's shape must not overflow (the size check then refuses it).
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || n == 0) return d < 0 ? -1 : 0;
    n = d != 0 && n > INT64_MAX / d ? INT64_MAX : n * d;
  }
  return n;
}

NpzArchive::NpzArchive(const std::string& path) : path_(path) {
  check_input_file(path);
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) throw UserError(path + ": cannot open for reading");
  fseeko(f.get(), 0, SEEK_END);
  const uint64_t size = static_cast<uint64_t>(ftello(f.get()));
  // End of central directory: 22 bytes plus a comment of up to 64 KiB, searched from the end.
  const uint64_t tail_size = std::min<uint64_t>(size, 22 + 65535);
  std::vector<unsigned char> tail(tail_size);
  read_at(f.get(), size - tail_size, tail.data(), tail_size, path, "end of central directory");
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_size) - 22; i >= 0; --i) {
    if (le32(&tail[i]) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw UserError(path + ": not a zip/npz archive (no end of central directory; truncated?)");
  uint64_t entries = le16(&tail[eocd + 10]);
  uint64_t directory_size = le32(&tail[eocd + 12]);
  uint64_t directory_offset = le32(&tail[eocd + 16]);
  if (entries == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF) {
    // zip64: a locator just before the EOCD points at the zip64 EOCD record.
    const uint64_t locator = size - tail_size + static_cast<uint64_t>(eocd) - 20;
    unsigned char loc[20];
    read_at(f.get(), locator, loc, 20, path, "zip64 locator");
    if (le32(loc) != 0x07064b50) throw UserError(path + ": corrupt zip64 archive (no zip64 locator)");
    unsigned char record[56];
    read_at(f.get(), le64(loc + 8), record, 56, path, "zip64 end of central directory");
    if (le32(record) != 0x06064b50) throw UserError(path + ": corrupt zip64 end of central directory");
    entries = le64(record + 32);
    directory_size = le64(record + 40);
    directory_offset = le64(record + 48);
  }
  if (directory_offset + directory_size > size)
    throw UserError(path + ": truncated zip archive (central directory)");
  std::vector<unsigned char> directory(static_cast<size_t>(directory_size));
  read_at(f.get(), directory_offset, directory.data(), directory.size(), path, "central directory");
  size_t at = 0;
  for (uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > directory.size() || le32(&directory[at]) != 0x02014b50)
      throw UserError(path + ": corrupt zip central directory at entry " + std::to_string(e));
    Member m;
    m.method = le16(&directory[at + 10]);
    m.crc32 = le32(&directory[at + 16]);
    m.compressed_size = le32(&directory[at + 20]);
    m.size = le32(&directory[at + 24]);
    const uint16_t name_length = le16(&directory[at + 28]), extra_length = le16(&directory[at + 30]),
                   comment_length = le16(&directory[at + 32]);
    m.local_header_offset = le32(&directory[at + 42]);
    if (at + 46 + name_length + extra_length > directory.size())
      throw UserError(path + ": corrupt zip central directory at entry " + std::to_string(e));
    m.name.assign(reinterpret_cast<const char*>(&directory[at + 46]), name_length);
    // zip64 extended information: the 0xFFFFFFFF fields, in order size, compressed size, offset.
    for (size_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const uint16_t id = le16(&directory[x]), length = le16(&directory[x + 2]);
      if (id == 0x0001) {
        size_t field = x + 4;
        const size_t field_end = std::min(x + 4 + length, directory.size());
        auto next64 = [&](uint64_t* value) {
          if (field + 8 > field_end) throw UserError(path + ": corrupt zip64 extra field of " + m.name);
          *value = le64(&directory[field]);
          field += 8;
        };
        if (m.size == 0xFFFFFFFF) next64(&m.size);
        if (m.compressed_size == 0xFFFFFFFF) next64(&m.compressed_size);
        if (m.local_header_offset == 0xFFFFFFFF) next64(&m.local_header_offset);
      }
      x += 4 + length;
    }
    // Sizes the directory declares must fit the archive: a member cannot start or end past its end, a stored
    // member holds as many bytes as it says, and deflate expands at most 1032:1 (zlib's bound).
    if (m.local_header_offset > size || m.compressed_size > size - m.local_header_offset)
      throw UserError(path + ": " + m.name + ": declared compressed size " + std::to_string(m.compressed_size) +
                      " lies past the end of the archive (" + std::to_string(size) + " bytes; truncated?)");
    if ((m.method == 0 && m.size != m.compressed_size) ||
        (m.method == 8 && m.size / 1032 > m.compressed_size + 1))
      throw UserError(path + ": " + m.name + ": declared size " + std::to_string(m.size) +
                      " bytes cannot come from " + std::to_string(m.compressed_size) + " compressed bytes");
    members_.push_back(m);
    at += 46 + name_length + extra_length + comment_length;
  }
}

std::vector<std::string> NpzArchive::names() const {
  std::vector<std::string> out;
  for (const Member& m : members_) {
    const bool npy = m.name.size() > 4 && m.name.compare(m.name.size() - 4, 4, ".npy") == 0;
    out.push_back(npy ? m.name.substr(0, m.name.size() - 4) : m.name);
  }
  return out;
}

bool NpzArchive::has(const std::string& name) const {
  const auto all = names();
  return std::find(all.begin(), all.end(), name) != all.end();
}

std::unique_ptr<NpyReader> NpzArchive::open(const std::string& name) const {
  for (const Member& m : members_) {
    if (m.name == name + ".npy" || m.name == name) return std::make_unique<NpyReader>(path_, m);
  }
  std::string list;
  for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
  throw UserError(path_ + ": no array '" + name + "' (holds: " + list + ")");
}

NpyReader::NpyReader(const std::string& archive, const NpzArchive::Member& member)
    : where_(archive + ": " + member.name + ": "), member_(member) {
  try {
    open_member(archive, member);
  } catch (...) {
    release();  // the destructor does not run when a constructor throws
    throw;
  }
}

void NpyReader::release() {
  if (inflater_) {
    inflateEnd(static_cast<z_stream*>(inflater_));
    delete static_cast<z_stream*>(inflater_);
    inflater_ = nullptr;
  }
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

void NpyReader::open_member(const std::string& archive, const NpzArchive::Member& member) {
  file_ = std::fopen(archive.c_str(), "rb");
  if (!file_) throw UserError(archive + ": cannot open for reading");
  unsigned char local[30];
  read_at(file_, member.local_header_offset, local, 30, archive, "member header");
  if (le32(local) != 0x04034b50) throw UserError(where_ + "corrupt zip local header");
  const uint64_t data_offset = member.local_header_offset + 30 + le16(local + 26) + le16(local + 28);
  if (fseeko(file_, static_cast<off_t>(data_offset), SEEK_SET) != 0)
    throw UserError(where_ + "truncated archive");
  if (member.method == 8) {
    auto* stream = new z_stream{};
    if (inflateInit2(stream, -MAX_WBITS) != Z_OK) {
      delete stream;
      throw UserError(where_ + "cannot initialise zlib");
    }
    inflater_ = stream;
    input_.resize(static_cast<size_t>(std::clamp<uint64_t>(member.compressed_size, 1, 1 << 20)));
  } else if (member.method != 0) {
    throw UserError(where_ + "zip compression method " + std::to_string(member.method) +
                    " is not supported (stored or deflated only)");
  }
  compressed_left_ = member.compressed_size;

  // .npy header: magic, version, header length (2 bytes in v1, 4 in v2/v3), then a Python dict literal.
  unsigned char magic[8];
  read_bytes(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw UserError(where_ + "not a .npy array (bad magic)");
  uint32_t header_length;
  if (magic[6] == 1) {
    unsigned char b[2];
    read_bytes(b, 2);
    header_length = le16(b);
  } else {
    unsigned char b[4];
    read_bytes(b, 4);
    header_length = le32(b);
  }
  if (header_length > (1u << 20)) throw UserError(where_ + ".npy header too long");
  const uint64_t header_bytes = (magic[6] == 1 ? 10 : 12) + static_cast<uint64_t>(header_length);
  std::string dict(header_length, '\0');
  read_bytes(dict.data(), header_length);
  try {
    parse_header(dict);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception&) {  // std::stoll / std::stoi on a malformed number
    throw UserError(where_ + "malformed .npy header: " + dict.substr(0, 120));
  }
  // The data must fill the member exactly: catches truncated archives and lying headers before allocating.
  uint64_t data_bytes = static_cast<uint64_t>(header_.item_size);
  bool overflow = false;
  for (int64_t dim : header_.shape)
    overflow |= __builtin_mul_overflow(data_bytes, static_cast<uint64_t>(dim), &data_bytes);
  if (overflow || header_bytes + data_bytes != member.size) {
    throw UserError(where_ + "header says " + std::to_string(header_.count()) + " elements of " +
                    std::to_string(header_.item_size) + " bytes, but the member holds " +
                    std::to_string(member.size - std::min(member.size, header_bytes)) + " data bytes");
  }
}

void NpyReader::parse_header(const std::string& dict) {
  auto value_of = [&](const std::string& key) {
    const size_t k = dict.find("'" + key + "'");
    if (k == std::string::npos) throw UserError(where_ + ".npy header has no '" + key + "'");
    size_t v = dict.find(':', k) + 1;
    while (v < dict.size() && dict[v] == ' ') ++v;
    return v;
  };
  size_t v = value_of("descr");
  const char quote = dict[v];
  const size_t end = dict.find(quote, v + 1);
  header_.descr = dict.substr(v + 1, end - v - 1);
  v = value_of("fortran_order");
  header_.fortran_order = dict.compare(v, 4, "True") == 0;
  v = value_of("shape");
  const size_t close = dict.find(')', v);
  for (size_t i = dict.find('(', v) + 1; i < close;) {
    while (i < close && (dict[i] == ' ' || dict[i] == ',')) ++i;
    if (i >= close) break;
    size_t j = i;
    while (j < close && std::isdigit(static_cast<unsigned char>(dict[j]))) ++j;
    if (j == i) throw UserError(where_ + "malformed shape in .npy header");
    // More than 15 digits is beyond the 2^40 limit below and beyond what std::stoll may hold.
    if (j - i > 15) throw UserError(where_ + "implausible shape in .npy header");
    header_.shape.push_back(std::stoll(dict.substr(i, j - i)));
    i = j;
  }
  const std::string& d = header_.descr;
  if (d.size() < 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=') ||
      std::string_view("iufb").find(d[1]) == std::string_view::npos)
    throw UserError(where_ + "dtype '" + d + "' is not supported (little-endian integers, floats, bool)");
  header_.kind = d[1];
  if (d.size() > 4 || !std::all_of(d.begin() + 2, d.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw UserError(where_ + "dtype '" + d + "' is not supported");
  header_.item_size = std::stoi(d.substr(2));
  const bool ok_size = header_.kind == 'f'
                           ? (header_.item_size == 2 || header_.item_size == 4 || header_.item_size == 8)
                           : (header_.item_size == 1 || header_.item_size == 2 || header_.item_size == 4 ||
                              header_.item_size == 8);
  if (!ok_size) throw UserError(where_ + "dtype '" + d + "' is not supported");
  for (int64_t dim : header_.shape) {
    if (dim > (int64_t{1} << 40)) throw UserError(where_ + "implausible shape in .npy header");
  }
}

NpyReader::~NpyReader() {
  release();
}

void NpyReader::read_bytes(void* out, size_t bytes) {
  read_member_bytes(out, bytes);
  // zlib's crc32 takes uInt lengths: feed it in pieces of at most 1 GiB.
  for (size_t done = 0; done < bytes;) {
    const uInt piece = static_cast<uInt>(std::min<size_t>(bytes - done, 1u << 30));
    crc_ = static_cast<uint32_t>(crc32(crc_, static_cast<const Bytef*>(out) + done, piece));
    done += piece;
  }
  produced_ += bytes;
  if (produced_ != member_.size) return;
  if (crc_ != member_.crc32) {
    char detail[64];
    std::snprintf(detail, sizeof(detail), "computed %08x, the archive says %08x", crc_, member_.crc32);
    throw UserError(where_ + "CRC-32 mismatch (" + detail + "; the archive is corrupt)");
  }
  if (inflater_) check_deflate_end();  // the data is intact; its stream must end here too
}

void NpyReader::refill_input() {
  auto* stream = static_cast<z_stream*>(inflater_);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(input_.size(), compressed_left_));
  if (want == 0) throw UserError(where_ + "truncated compressed data");
  if (std::fread(input_.data(), 1, want, file_) != want) throw UserError(where_ + "truncated compressed data");
  compressed_left_ -= want;
  stream->next_in = input_.data();
  stream->avail_in = static_cast<uInt>(want);
}

void NpyReader::check_deflate_end() {
  auto* stream = static_cast<z_stream*>(inflater_);
  unsigned char extra = 0;
  for (;;) {
    stream->next_out = &extra;
    stream->avail_out = 1;
    if (stream->avail_in == 0 && compressed_left_ > 0) refill_input();
    const int status = inflate(stream, Z_NO_FLUSH);
    if (status == Z_STREAM_END && stream->avail_out == 1) return;
    if (stream->avail_out == 0) throw UserError(where_ + "array data longer than its header says");
    if (status == Z_BUF_ERROR && stream->avail_in == 0 && compressed_left_ == 0)
      throw UserError(where_ + "truncated compressed data (no end of the deflate stream)");
    if (status != Z_OK && status != Z_BUF_ERROR)
      throw UserError(where_ + "corrupt compressed data (" + (stream->msg ? stream->msg : "zlib error") + ")");
  }
}

void NpyReader::read_member_bytes(void* out, size_t bytes) {
  if (!inflater_) {
    if (bytes > compressed_left_ || std::fread(out, 1, bytes, file_) != bytes)
      throw UserError(where_ + "truncated array data");
    compressed_left_ -= bytes;
    return;
  }
  auto* stream = static_cast<z_stream*>(inflater_);
  stream->next_out = static_cast<Bytef*>(out);
  while (bytes > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(bytes, 1u << 30));
    stream->avail_out = chunk;
    while (stream->avail_out > 0) {
      if (stream->avail_in == 0) refill_input();
      const int status = inflate(stream, Z_NO_FLUSH);
      if (status == Z_STREAM_END && stream->avail_out > 0)
        throw UserError(where_ + "array data shorter than its header says");
      if (status != Z_OK && status != Z_STREAM_END)
        throw UserError(where_ + "corrupt compressed data (" + (stream->msg ? stream->msg : "zlib error") +
                        ")");
    }
    bytes -= chunk;
  }
}

void NpyReader::load_fortran_array() {
  const size_t item = static_cast<size_t>(header_.item_size);
  const int64_t count = header_.count();
  std::vector<unsigned char> column_major(static_cast<size_t>(count) * item);
  read_bytes(column_major.data(), column_major.size());
  c_order_.resize(column_major.size());
  // Element (i_0, .., i_{d-1}) is at sum i_k * stride_k with stride_0 = 1, stride_k = stride_{k-1} *
  // shape_{k-1} on disk; walk it in C order (last index fastest), carrying the multi-index.
  const std::vector<int64_t>& shape = header_.shape;
  const size_t dims = shape.size();
  std::vector<int64_t> stride(dims, 1), index(dims, 0);
  for (size_t k = 1; k < dims; ++k) stride[k] = stride[k - 1] * shape[k - 1];
  int64_t offset = 0;  // of `index` in column-major order
  for (int64_t linear = 0; linear < count; ++linear) {
    std::memcpy(c_order_.data() + static_cast<size_t>(linear) * item, column_major.data() + offset * item,
                item);
    for (size_t k = dims; k-- > 0;) {  // index += 1 in C order
      if (++index[k] < shape[k]) {
        offset += stride[k];
        break;
      }
      offset -= stride[k] * (shape[k] - 1);
      index[k] = 0;
    }
  }
  c_order_pos_ = 0;
}

void NpyReader::read_data(void* out, size_t bytes) {
  if (!header_.fortran_order || header_.shape.size() < 2) return read_bytes(out, bytes);  // C order already
  if (c_order_.empty() && header_.count() > 0) load_fortran_array();
  if (bytes > c_order_.size() - c_order_pos_) throw UserError(where_ + "truncated array data");
  std::memcpy(out, c_order_.data() + c_order_pos_, bytes);
  c_order_pos_ += bytes;
}

namespace {

// IEEE half -> float (numpy '<f2').
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

// Converts n stored elements of type Stored (little-endian, possibly unaligned) into out.
template <typename Stored, typename T>
void convert_block(const unsigned char* in, int64_t n, T* out) {
  if constexpr (std::is_same_v<Stored, T>) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(T));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      Stored x;
      std::memcpy(&x, in + i * static_cast<int64_t>(sizeof(Stored)), sizeof(Stored));
      out[i] = static_cast<T>(x);
    }
  }
}

template <typename T>
void convert_half_block(const unsigned char* in, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t x;
    std::memcpy(&x, in + 2 * i, 2);
    out[i] = static_cast<T>(half_to_float(x));
  }
}

}  // namespace

template <typename T>
void NpyReader::read(T* out, int64_t count) {
  const char kind = header_.kind;
  if constexpr (std::is_integral_v<T>) {
    if (kind == 'f') throw UserError(where_ + "expected integers, found dtype '" + header_.descr + "'");
  }
  const int64_t block = 1 << 18;
  staging_.resize(static_cast<size_t>(std::min(block, count) * header_.item_size));
  for (int64_t done = 0; done < count;) {
    const int64_t n = std::min(block, count - done);
    read_data(staging_.data(), static_cast<size_t>(n * header_.item_size));
    const unsigned char* in = staging_.data();
    T* to = out + done;
    const bool known =
        visit_numpy_dtype(kind, header_.item_size, [&](auto stored) { convert_block<decltype(stored)>(in, n, to); });
    if (!known && kind == 'f' && header_.item_size == 2)
      convert_half_block(in, n, to);
    else if (!known)
      throw UserError(where_ + "unsupported dtype '" + header_.descr + "'");
    done += n;
  }
}

template void NpyReader::read<int64_t>(int64_t*, int64_t);
template void NpyReader::read<int32_t>(int32_t*, int64_t);
template void NpyReader::read<float>(float*, int64_t);
template void NpyReader::read<double>(double*, int64_t);

}  // namespace halogen::io
