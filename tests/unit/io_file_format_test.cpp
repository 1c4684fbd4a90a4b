// io/file_format.h: the root attributes format and format_version (written, read, and read from files of the
// earlier convention: `version`, "halogen-checkpoint"), and file_checksum against XXH3-64 reference values
// (libxxhash's XXH3_64bits of the same bytes, as `xxhsum -H3` prints them).
#include <gtest/gtest.h>

#include <string>

#include "input_test_util.h"
#include "io/file_format.h"
#include "io/h5.h"

using halogen::h5::File;
using halogen::h5::Mode;
namespace io = halogen::io;

namespace {

std::string temp_file(const std::string& name, const std::string& bytes) {
  return halogen::test::write_text_file("file_format", name, bytes);
}

}  // namespace

TEST(FileFormat, WrittenAndReadBack) {
  const std::string path = temp_file("written.h5", "");
  {
    File file(path, Mode::create);
    io::write_format(file, "halogen.part", 2);
  }
  File file(path, Mode::read);
  EXPECT_EQ(file.attr_string("format"), "halogen.part");
  EXPECT_EQ(file.attr_int("format_version"), 2);
  EXPECT_FALSE(file.has_attr("version"));
  EXPECT_EQ(io::read_format(file), "halogen.part");
  EXPECT_EQ(io::read_format_version(file), 2);
}

TEST(FileFormat, EarlierFilesReadAsTheSameLayout) {
  const std::string path = temp_file("earlier.h5", "");
  {
    File file(path, Mode::create);
    file.set_attr("format", std::string("halogen-checkpoint"));
    file.set_attr("version", int64_t{1});
  }
  {
    File file(path, Mode::read);
    EXPECT_EQ(io::read_format(file), "halogen.checkpoint");
    EXPECT_EQ(io::read_format_version(file), 1);
  }
  {
    File file(path, Mode::create);  // neither attribute
  }
  File file(path, Mode::read);
  EXPECT_EQ(io::read_format(file), "");
  EXPECT_EQ(io::read_format_version(file), -1);
}

TEST(FileFormat, ChecksumIsXxh3OfTheWholeFile) {
  EXPECT_EQ(io::file_checksum(temp_file("empty", "")), "xxh3-64:2d06800538d394c2");
  EXPECT_EQ(io::file_checksum(temp_file("word", "Halogen")), "xxh3-64:389499f863bfb442");
  // Longer than the 4 MiB read buffer: the streaming state carries over between reads.
  std::string big;
  for (int r = 0; r < 40000; ++r)
    for (int b = 0; b < 256; ++b) big += static_cast<char>(b);
  EXPECT_EQ(io::file_checksum(temp_file("big", big)), "xxh3-64:e93fd97c8f029ea3");
  EXPECT_NE(halogen::test::message_of([] { io::file_checksum("/nonexistent/file.h5"); })
                .find("/nonexistent/file.h5: cannot open"),
            std::string::npos);
}

TEST(FileFormat, ChecksumKinds) {
  EXPECT_TRUE(io::is_current_checksum("xxh3-64:389499f863bfb442"));
  EXPECT_FALSE(io::is_current_checksum("fnv1a64:0123456789abcdef"));
  EXPECT_EQ(io::checksum_kind_hint("xxh3-64:1", "xxh3-64:2"), "");
  EXPECT_EQ(io::checksum_kind_hint("fnv1a64:1", "fnv1a64:2"), "");
  EXPECT_NE(io::checksum_kind_hint("fnv1a64:1", "xxh3-64:2").find("earlier Halogen"), std::string::npos);
  EXPECT_NE(io::checksum_kind_hint("xxh3-64:2", "fnv1a64:1").find("partition the graph again"), std::string::npos);
}
