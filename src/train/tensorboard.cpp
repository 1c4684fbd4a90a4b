#include "train/tensorboard.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <unistd.h>

#include "core/error.h"
#include "core/format.h"
#include "core/runtime.h"

namespace halogen::train {
namespace {

std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[i] = crc;
  }
  return table;
}

double wall_seconds_since_epoch() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Protobuf wire format: varints, and fields by (number << 3 | wire type).
void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}
void put_fixed(std::string& out, const void* bytes, size_t size) {  // little-endian hosts (x86-64, aarch64)
  out.append(static_cast<const char*>(bytes), size);
}
void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<uint64_t>(field << 3 | wire_type));
}
void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}
void put_double(std::string& out, int field, double value) {
  put_key(out, field, 1);
  put_fixed(out, &value, sizeof(value));
}
void put_float(std::string& out, int field, float value) {
  put_key(out, field, 5);
  put_fixed(out, &value, sizeof(value));
}

// Event { wall_time = 1; step = 2; } with the caller's other fields appended.
std::string event_prefix(int64_t step) {
  std::string event;
  put_double(event, 1, wall_seconds_since_epoch());
  put_key(event, 2, 0);
  put_varint(event, static_cast<uint64_t>(step));
  return event;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> table = crc32c_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xffu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const void* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  HALOGEN_USER_CHECK(!error && std::filesystem::is_directory(dir),
                     "%s: cannot create the TensorBoard directory: %s", dir.c_str(),
                     error ? error.message().c_str() : "not a directory");
  path_ = strformat("%s/events.out.tfevents.%lld.%s", dir.c_str(), (long long)std::time(nullptr),
                    host_name().c_str());
  file_ = std::fopen(path_.c_str(), "wb");
  HALOGEN_USER_CHECK(file_ != nullptr, "%s: cannot write TensorBoard events: %s", path_.c_str(),
                     std::strerror(errno));
  std::string first = event_prefix(0);
  put_bytes(first, 3, "brain.Event:2");
  record(first);
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  std::string summary;
  for (const auto& [tag, value] : values) {
    std::string entry;
    put_bytes(entry, 1, tag);
    put_float(entry, 2, static_cast<float>(value));
    put_bytes(summary, 1, entry);
  }
  std::string event = event_prefix(step);
  put_bytes(event, 5, summary);
  record(event);
}

void TensorBoardWriter::record(const std::string& event) {
  // One buffer per record, one write and a flush: a full disk (ENOSPC, EFBIG) fails the record, and the file
  // is cut back to its last complete record, so a reader never meets half of one.
  HALOGEN_USER_CHECK(file_ != nullptr, "%s: cannot write TensorBoard events after an earlier write failed",
                     path_.c_str());
  const uint64_t length = event.size();
  const uint32_t length_crc = masked_crc32c(&length, sizeof(length));
  const uint32_t data_crc = masked_crc32c(event.data(), event.size());
  std::string framed(sizeof(length) + sizeof(length_crc), '\0');
  std::memcpy(framed.data(), &length, sizeof(length));
  std::memcpy(framed.data() + sizeof(length), &length_crc, sizeof(length_crc));
  framed += event;
  framed.append(reinterpret_cast<const char*>(&data_crc), sizeof(data_crc));
  const bool written = std::fwrite(framed.data(), 1, framed.size(), file_) == framed.size() && std::fflush(file_) == 0;
  if (written) {
    complete_bytes_ += static_cast<int64_t>(framed.size());
    return;
  }
  const int error = errno;
  std::clearerr(file_);
  std::fclose(file_);  // drops what is still buffered (the close's own write error is the same full disk)
  file_ = nullptr;
  if (complete_bytes_ == 0) {
    std::remove(path_.c_str());  // not even the header fitted: no empty event file is left for TensorBoard
  } else if (::truncate(path_.c_str(), complete_bytes_) != 0) {
    // The cut failed too: say so, the file's last record may be partial.
    throw UserError(strformat("%s: cannot write TensorBoard events: %s (and cannot cut the file back to its last "
                              "complete record: %s)", path_.c_str(), std::strerror(error), std::strerror(errno)));
  }
  throw UserError(strformat("%s: cannot write TensorBoard events: %s (the file keeps its %lld bytes of complete "
                            "records)", path_.c_str(), std::strerror(error), (long long)complete_bytes_));
}

}  // namespace halogen::train
