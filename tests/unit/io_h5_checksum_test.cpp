// Integrity of HDF5 files (io/h5.h): every dataset File::write creates carries a Fletcher-32 checksum per
// chunk, and every read verifies it. Flipping any single byte of a chunk (data or the stored checksum), plain
// or deflated, makes every read touching that chunk fail with "FILE: DATASET: checksum mismatch (file is
// corrupt)"; reads of other chunks still succeed; a dataset that holds data without a checksum is refused;
// scalars (which HDF5 cannot chunk) carry a CRC-32 attribute instead.
// Before checksums (contiguous storage) the same flips read back silently changed values.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/h5.h"
#include "temp_dir_util.h"

namespace fs = std::filesystem;
using halogen::UserError;
using halogen::h5::File;
using halogen::h5::Mode;

namespace {

std::string temp_path(const std::string& name) {
  return (halogen::test::test_temp_dir("h5_checksum") / name).string();
}

struct ChunkBytes {
  int64_t offset = 0, size = 0;  // in the file; size includes the 4-byte Fletcher-32 checksum
};

// Where the chunks of `dataset` lie in the file (HDF5 >= 1.10.5).
std::vector<ChunkBytes> chunks_of(const std::string& path, const std::string& dataset) {
  std::vector<ChunkBytes> out;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(ds);
  hsize_t count = 0;
  H5Dget_num_chunks(ds, space, &count);
  for (hsize_t i = 0; i < count; ++i) {
    hsize_t offset[2];
    unsigned mask = 0;
    haddr_t address = 0;
    hsize_t size = 0;
    H5Dget_chunk_info(ds, space, i, offset, &mask, &address, &size);
    out.push_back({static_cast<int64_t>(address), static_cast<int64_t>(size)});
  }
  H5Sclose(space);
  H5Dclose(ds);
  H5Fclose(file);
  return out;
}

void flip_byte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char byte = 0;
  f.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x01);
  f.seekp(offset);
  f.write(&byte, 1);
}

// The message of the UserError `read` throws, or "no error".
template <typename Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(H5Checksum, EverySingleByteFlipInAChunkIsCaughtPlainOrDeflated) {
  const std::string path = temp_path("small.h5");
  std::vector<int32_t> plain(100);
  for (int i = 0; i < 100; ++i) plain[i] = i * 7919;
  std::vector<float> sparse(2000, 0.0f);  // compresses well: the deflated chunk is much smaller than the data
  for (int i = 0; i < 2000; i += 13) sparse[i] = 1.5f;
  {
    File file(path, Mode::create);
    file.write("/plain", plain);
    file.write("/sparse", sparse, /*compress=*/true);
  }
  const std::string plain_error = path + ": /plain: checksum mismatch (file is corrupt)";
  const std::string sparse_error = path + ": /sparse: checksum mismatch (file is corrupt)";
  {
    File file(path, Mode::read);
    EXPECT_TRUE(file.has_checksum("/plain"));
    EXPECT_TRUE(file.has_checksum("/sparse"));
    EXPECT_EQ(file.read<int32_t>("/plain"), plain);
    EXPECT_EQ(file.read<float>("/sparse"), sparse);
  }
  int64_t flips = 0;
  for (const char* dataset : {"/plain", "/sparse"}) {
    const std::vector<ChunkBytes> chunks = chunks_of(path, dataset);
    ASSERT_EQ(chunks.size(), 1u) << dataset;
    if (std::string(dataset) == "/sparse") {
      EXPECT_LT(chunks[0].size, 2000 * 4 / 4) << "not deflated";
    }
    for (int64_t at = chunks[0].offset; at < chunks[0].offset + chunks[0].size; ++at) {
      flip_byte(path, at);
      const File file(path, Mode::read);
      if (std::string(dataset) == "/plain") {
        EXPECT_EQ(error_of([&] { file.read<int32_t>("/plain"); }), plain_error) << "byte " << at;
        EXPECT_EQ(error_of([&] { file.read_rows<int32_t>("/plain", 99, 100); }), plain_error)
            << "byte " << at;
        EXPECT_EQ(error_of([&] { file.read<int64_t>("/plain"); }), plain_error) << "widened, byte " << at;
        EXPECT_EQ(file.read<float>("/sparse"), sparse);  // the other dataset is intact
      } else {
        EXPECT_EQ(error_of([&] { file.read<float>("/sparse"); }), sparse_error) << "byte " << at;
        EXPECT_EQ(error_of([&] { file.read_selected_rows<float>("/sparse", {3}); }), sparse_error)
            << "byte " << at;
        EXPECT_EQ(file.read<int32_t>("/plain"), plain);
      }
      EXPECT_EQ(error_of([&] { file.verify_checksum(dataset); }),
                std::string(dataset) == "/plain" ? plain_error : sparse_error);
      flip_byte(path, at);  // restore
      ++flips;
    }
  }
  EXPECT_GT(flips, 400);  // 400 data bytes + 4 checksum bytes of /plain alone
}

TEST(H5Checksum, PartialReadsVerifyTheChunksTheyTouch) {
  const std::string path = temp_path("rows.h5");
  const int64_t rows = 300000, cols = 2;  // 2.4 MB: three chunks of 131072 rows (1 MiB)
  std::vector<float> values(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) values[i] = static_cast<float>(i % 1000);
  {
    File file(path, Mode::create);
    file.write("/feat", values.data(), {rows, cols});
  }
  const std::vector<ChunkBytes> chunks = chunks_of(path, "/feat");
  ASSERT_EQ(chunks.size(), 3u);
  flip_byte(path, chunks[1].offset + chunks[1].size / 3);  // rows [131072, 262144)
  const File file(path, Mode::read);
  const std::string error = path + ": /feat: checksum mismatch (file is corrupt)";
  EXPECT_EQ(file.read_rows<float>("/feat", 0, 1000).size(), 2000u);            // chunk 0 only
  EXPECT_EQ(file.read_rows<float>("/feat", 262144, rows).size(), 2 * 37856u);  // chunk 2 only
  EXPECT_EQ(error_of([&] { file.read_rows<float>("/feat", 140000, 140010); }), error);
  EXPECT_EQ(error_of([&] { file.read_selected_rows<float>("/feat", {5, 200000}); }), error);
  EXPECT_EQ(error_of([&] { file.read<float>("/feat"); }), error);
  EXPECT_EQ(error_of([&] { file.verify_checksum("/feat"); }), error);
}

TEST(H5Checksum, WideRowsAreCutIntoChunksOfAboutOneMebibyte) {
  const std::string path = temp_path("wide.h5");
  const int64_t rows = 3, cols = 300000;  // a row of 1.2 MB: chunks of 262144 columns of one row
  std::vector<float> values(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) values[i] = static_cast<float>(i);
  {
    File file(path, Mode::create);
    file.write("/wide", values.data(), {rows, cols});
  }
  EXPECT_EQ(chunks_of(path, "/wide").size(), 6u);  // 3 rows x 2 column blocks
  const File file(path, Mode::read);
  EXPECT_EQ(file.read<float>("/wide"), values);
  EXPECT_EQ(file.verify_checksum("/wide"), rows * cols * 4);
}

TEST(H5Checksum, DatasetWithDataButNoChecksumIsRefusedEmptyOneIsNot) {
  const std::string path = temp_path("old.h5");
  {  // an older Halogen's layout: contiguous, no filter
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims = 4;
    const hid_t space = H5Screate_simple(1, &dims, nullptr);
    const hid_t ds = H5Dcreate2(file, "/old", H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int64_t data[4] = {1, 2, 3, 4};
    H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(file);
  }
  {
    File file(path, Mode::read);
    EXPECT_FALSE(file.has_checksum("/old"));
    const std::string message = error_of([&] { file.read<int64_t>("/old"); });
    EXPECT_EQ(message.rfind(path + ": /old: no checksum (written by an older Halogen or another tool", 0), 0u)
        << message;
    EXPECT_EQ(error_of([&] { file.read_rows<int64_t>("/old", 0, 1); }), message);
    EXPECT_EQ(error_of([&] { file.verify_checksum("/old"); }), message);
  }
  const std::string empty_path = temp_path("empty.h5");
  {
    File file(empty_path, Mode::create);
    file.write("/none", std::vector<int64_t>{});
  }
  const File file(empty_path, Mode::read);
  EXPECT_FALSE(file.has_checksum("/none"));  // no data, nothing to protect
  EXPECT_TRUE(file.read<int64_t>("/none").empty());
  EXPECT_EQ(file.verify_checksum("/none"), 0);
}

TEST(H5Checksum, ScalarsCarryACrc32AttributeCheckedOnRead) {
  const std::string path = temp_path("scalar.h5");
  const int64_t value = 0x0123456789abcdef;
  {
    File file(path, Mode::create);
    file.write("/epoch", &value, {});
  }
  int64_t offset = 0;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(file, "/epoch", H5P_DEFAULT);
    offset = static_cast<int64_t>(H5Dget_offset(ds));
    H5Dclose(ds);
    H5Fclose(file);
  }
  {
    const File file(path, Mode::read);
    EXPECT_TRUE(file.has_checksum("/epoch"));
    EXPECT_EQ(file.read<int64_t>("/epoch"), std::vector<int64_t>{value});
    EXPECT_EQ(file.verify_checksum("/epoch"), 8);
  }
  for (int64_t at = offset; at < offset + 8; ++at) {
    flip_byte(path, at);
    const File file(path, Mode::read);
    EXPECT_EQ(error_of([&] { file.read<int64_t>("/epoch"); }),
              path + ": /epoch: checksum mismatch (file is corrupt)")
        << "byte " << at;
    flip_byte(path, at);
  }
  {  // without the attribute: refused like any dataset without a checksum
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete_by_name(file, "/epoch", "crc32", H5P_DEFAULT);
    H5Fclose(file);
  }
  const File file(path, Mode::read);
  EXPECT_EQ(error_of([&] { file.read<int64_t>("/epoch"); }).rfind(path + ": /epoch: no checksum", 0), 0u);
}
