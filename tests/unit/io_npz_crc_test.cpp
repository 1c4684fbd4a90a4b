// Integrity of .npz archives (io/npz.h): the zip CRC-32 of each member is verified when the member is read to
// its end. Every single-byte flip in the stored bytes of every member of the test archives (stored and
// deflated) is refused with a UserError naming the archive and the member; past the .npy header of a stored
// member the message is "CRC-32 mismatch", and in a deflated member some flips are caught by the CRC alone
// (zlib decodes them without complaint: before the CRC check they converted silently). A flip that leaves a
// deflated member's decoded bytes unchanged (e.g. in a Huffman code of an unused symbol) corrupts nothing and
// reads normally.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/npz.h"
#include "input_test_util.h"

namespace fs = std::filesystem;
using halogen::test::read_all;
using halogen::test::write_all;

namespace {

uint32_t le(const std::string& bytes, size_t at, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

struct StoredMember {
  std::string name;  // without ".npy"
  size_t data_offset = 0, stored_size = 0, size = 0;
  bool deflated = false;
};

// The members of a zip archive in file order, from their local headers (the fixtures have no data
// descriptors: asserted).
std::vector<StoredMember> members_of(const std::string& bytes) {
  std::vector<StoredMember> out;
  for (size_t at = 0; at + 30 <= bytes.size() && le(bytes, at, 4) == 0x04034b50;) {
    StoredMember m;
    EXPECT_EQ(le(bytes, at + 6, 2) & 8, 0u) << "data descriptor";
    m.deflated = le(bytes, at + 8, 2) == 8;
    m.stored_size = le(bytes, at + 18, 4);
    m.size = le(bytes, at + 22, 4);
    const size_t name_length = le(bytes, at + 26, 2), extra_length = le(bytes, at + 28, 2);
    if (m.stored_size == 0xFFFFFFFFu) {  // numpy writes zip64 members: sizes in extra field 0x0001
      const size_t extra = at + 30 + name_length;
      EXPECT_EQ(le(bytes, extra, 2), 1u) << "zip64 extra field";
      m.size = le(bytes, extra + 4, 4);  // the fixtures' sizes fit 32 bits: the high halves are 0
      m.stored_size = le(bytes, extra + 12, 4);
    }
    m.name = bytes.substr(at + 30, name_length);
    m.name = m.name.substr(0, m.name.size() - 4);
    m.data_offset = at + 30 + name_length + extra_length;
    out.push_back(m);
    at = m.data_offset + m.stored_size;
  }
  return out;
}

// The bytes a raw deflate stream decodes to ("" when zlib rejects it).
std::string inflate_raw(const std::string& stored, size_t size) {
  std::string out(size + 1, '\0');
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) return "";
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(stored.data()));
  stream.avail_in = static_cast<uInt>(stored.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = inflate(&stream, Z_FINISH);
  const size_t produced = out.size() - stream.avail_out;
  inflateEnd(&stream);
  return status == Z_STREAM_END ? out.substr(0, produced) : "";
}

// Reads the whole member as doubles; the UserError's message, or "no error".
std::string read_member(const fs::path& archive, const std::string& name) {
  try {
    const halogen::io::NpzArchive npz(archive.string());
    auto reader = npz.open(name);
    std::vector<double> values(static_cast<size_t>(reader->header().count()));
    reader->read(values.data(), static_cast<int64_t>(values.size()));
  } catch (const halogen::UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(NpzCrc, EverySingleByteFlipInEveryMemberIsRefusedNamingArchiveAndMember) {
  const fs::path dir = halogen::test::test_temp_dir("npz_crc");
  int64_t stored_crc = 0, deflated_crc = 0, deflated_zlib = 0, harmless = 0, flips = 0;
  for (const char* variant : {"npz_stored", "npz_deflated"}) {
    for (const char* file : {"data.npz", "node-label.npz"}) {
      const fs::path fixture = fs::path(HALOGEN_SOURCE_DIR) / "tests" / "io" / variant / "raw" / file;
      const fs::path archive = dir / (std::string(variant) + "_" + file);
      const std::string original = read_all(fixture);
      const std::vector<StoredMember> members = members_of(original);
      ASSERT_FALSE(members.empty()) << fixture;
      for (const StoredMember& m : members) {
        write_all(archive, original);
        ASSERT_EQ(read_member(archive, m.name), "no error") << archive << " " << m.name;
        const std::string where = archive.string() + ": " + m.name + ".npy: ";
        const std::string plain =
            m.deflated ? inflate_raw(original.substr(m.data_offset, m.stored_size), m.size) : std::string();
        for (size_t at = m.data_offset; at < m.data_offset + m.stored_size; ++at) {
          std::string bytes = original;
          bytes[at] = static_cast<char>(bytes[at] ^ 0x20);
          write_all(archive, bytes);
          const std::string message = read_member(archive, m.name);
          ++flips;
          if (m.deflated && inflate_raw(bytes.substr(m.data_offset, m.stored_size), m.size) == plain) {
            EXPECT_EQ(message, "no error") << "byte " << at << " decodes to the same bytes";
            ++harmless;
            continue;
          }
          ASSERT_EQ(message.rfind(where, 0), 0u)
              << archive << " " << m.name << " byte " << at << ": " << message;
          const bool crc = message.find("CRC-32 mismatch") != std::string::npos;
          // A stored member's data (past its 128-byte .npy header, numpy's padding) reaches the CRC check.
          if (!m.deflated && at >= m.data_offset + 128) {
            EXPECT_TRUE(crc) << "byte " << at << ": " << message;
          }
          if (m.deflated)
            ++(crc ? deflated_crc : deflated_zlib);
          else
            stored_crc += crc;
        }
      }
    }
  }
  EXPECT_GT(flips, 1000);
  EXPECT_GT(stored_crc, 100);
  EXPECT_GT(deflated_crc, 0);  // flips zlib decodes into other bytes: only the CRC catches them
  std::printf(
      "%lld flips: stored members %lld refused by CRC-32 (the rest by the .npy header); deflated %lld by "
      "CRC-32, %lld by zlib or the .npy header, %lld decode to the same bytes\n",
      static_cast<long long>(flips), static_cast<long long>(stored_crc), static_cast<long long>(deflated_crc),
      static_cast<long long>(deflated_zlib), static_cast<long long>(harmless));
}
