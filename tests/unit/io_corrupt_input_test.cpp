// Robustness: every truncation of small npz archives (every 11th length) and of a gzip edge list (every
// length) raises a UserError, and single-byte corruptions (the same positions) either convert or raise a
// UserError -- never a crash, a hang or another exception type. Under -DHALOGEN_ASAN=ON this also checks for
// out-of-bounds access.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "io/convert.h"
#include "input_test_util.h"

namespace fs = std::filesystem;
using halogen::test::read_all;
using halogen::test::write_all;

namespace {

// Converts `dir`, reporting anything but success or UserError as a test failure.
int convert_outcome(const fs::path& dir, const std::string& what) {
  halogen::io::ConvertOptions options;
  options.input = dir.string();
  try {
    halogen::io::convert_ogb_to_file(options, dir.string() + ".h5");  // beside the input directory
    return 0;
  } catch (const halogen::UserError&) {
    return 1;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a UserError: " << e.what();
    return 2;
  }
}

void mutate_every_byte(const fs::path& dir, const fs::path& victim, int step) {
  const std::string original = read_all(victim);
  for (size_t length = 0; length < original.size(); length += step) {
    write_all(victim, original.substr(0, length));
    // A truncated file is never read as a whole one (zip: the central directory and CRC-32; gzip: the trailer).
    EXPECT_EQ(convert_outcome(dir, victim.string() + " truncated to " + std::to_string(length)), 1)
        << victim << " truncated to " << length << " of " << original.size() << " bytes was accepted";
  }
  for (size_t at = 0; at < original.size(); at += step) {
    std::string bytes = original;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x5A);
    write_all(victim, bytes);
    convert_outcome(dir, victim.string() + " byte " + std::to_string(at) + " flipped");
  }
  write_all(victim, original);
  EXPECT_EQ(convert_outcome(dir, "restored"), 0);
}

}  // namespace

TEST(CorruptInput, NpzArchivesTruncatedOrFlippedAreRejectedCleanly) {
  for (const char* variant : {"npz_stored", "npz_deflated"}) {
    const fs::path dir =
        halogen::test::test_temp_dir("io_corrupt") / variant;
    fs::remove_all(dir);
    fs::create_directories(dir.parent_path());
    fs::copy(fs::path(HALOGEN_SOURCE_DIR) / "tests" / "io" / variant, dir, fs::copy_options::recursive);
    mutate_every_byte(dir, dir / "raw" / "data.npz", 11);  // every 11th byte: ~470 runs in all, ~2 s
    mutate_every_byte(dir, dir / "raw" / "node-label.npz", 11);
  }
}

TEST(CorruptInput, GzipEdgeListTruncatedOrFlippedIsRejectedCleanly) {
  const fs::path dir = halogen::test::test_temp_dir("io_corrupt") / "ogb";
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(fs::path(HALOGEN_SOURCE_DIR) / "tests" / "io" / "npz_deflated", dir, fs::copy_options::recursive);
  fs::remove(dir / "raw" / "data.npz");
  fs::remove(dir / "raw" / "node-label.npz");
  std::ofstream(dir / "raw" / "num-node-list.csv") << "5\n";
  std::ofstream(dir / "raw" / "num-edge-list.csv") << "5\n";
  const std::string edges = "0,1\n1,2\n2,2\n3,1\n0,1\n";
  gzFile gz = gzopen((dir / "raw" / "edge.csv.gz").c_str(), "wb");
  ASSERT_TRUE(gz != nullptr);
  gzwrite(gz, edges.data(), static_cast<unsigned>(edges.size()));
  gzclose(gz);
  ASSERT_EQ(convert_outcome(dir, "valid gzip"), 0);
  mutate_every_byte(dir, dir / "raw" / "edge.csv.gz", 1);
}
