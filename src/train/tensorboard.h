#pragma once
// TensorBoardWriter: `halogen train --tensorboard DIR` - scalar summaries in TensorBoard's event-file format,
// written without TensorFlow. A file DIR/events.out.tfevents.<unix seconds>.<host> is a sequence of
// TFRecords:
//   uint64 length (little endian) | uint32 masked_crc32c(length bytes) | data[length] | uint32
//   masked_crc32c(data)
// with masked_crc32c(x) = rotate_right(crc32c(x), 15) + 0xa282ead8 (CRC-32C, Castagnoli). Each record's data
// is an `Event` protobuf (tensorflow/core/util/event.proto): wall_time = 1 (double), step = 2 (int64),
// file_version = 3 (string; the first record: "brain.Event:2"), summary = 5 (Summary: repeated Value value =
// 1; Value: tag = 1 (string), simple_value = 2 (float)). The encoder below writes exactly those fields. Rank
// 0 only (the trainer makes one on rank 0). Every record is flushed, so TensorBoard sees a running job; a record
// that cannot be written (full disk) is cut off again, so the file holds only complete records.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace halogen::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `size` bytes, and TFRecord's masked form of it.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

class TensorBoardWriter {
 public:
  // Creates DIR (and its parents) if needed and the event file in it; UserError naming the path on failure.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event at `step` holding one simple_value per (tag, value), e.g. {"loss", 0.41}, {"valid_acc", 0.8}.
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  const std::string& path() const { return path_; }

 private:
  void record(const std::string& event);
  std::string path_;
  FILE* file_ = nullptr;        // nullptr after a failed write (the trainer ends the job on it)
  int64_t complete_bytes_ = 0;  // the file's length up to its last complete record
};

}  // namespace halogen::train
