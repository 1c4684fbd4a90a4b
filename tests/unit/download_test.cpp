// download module: SHA-256 against the FIPS 180-2 vectors, and the catalogue's entries well-formed.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "core/error.h"
#include "download/catalog.h"
#include "download/sha256.h"

namespace halogen::download {
namespace {

std::string sha256_of(const std::string& text) {
  Sha256 h;
  h.update(text.data(), text.size());
  return h.hex();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A million 'a's, in pieces that do not align with the 64-byte block.
  Sha256 h;
  const std::string piece(999, 'a');
  for (int i = 0; i < 1002; ++i) h.update(piece.data(), i == 1001 ? 1 : piece.size());  // 1001 x 999 + 1
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileEqualsBytes) {
  const std::string path = testing::TempDir() + "sha256_test.bin";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::string content;
  for (int i = 0; i < (5 << 20) + 17; ++i) content.push_back(static_cast<char>(i * 31));  // > one 4 MiB buffer
  std::fwrite(content.data(), 1, content.size(), f);
  std::fclose(f);
  EXPECT_EQ(sha256_file(path), sha256_of(content));
  std::remove(path.c_str());
  EXPECT_THROW(sha256_file(path), UserError);
}

TEST(Sha256, HexCheck) {
  EXPECT_TRUE(is_sha256_hex(std::string(64, 'a')));
  EXPECT_TRUE(is_sha256_hex("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a')));
  EXPECT_FALSE(is_sha256_hex(std::string(63, 'a') + "g"));
}

TEST(Catalog, EntriesAreWellFormed) {
  std::set<std::string> names;
  for (const Dataset& d : catalog()) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate name";
    ASSERT_FALSE(d.files.empty());
    EXPECT_GT(d.vertices, 0);
    EXPECT_GT(d.approx_download_bytes, 0);
    EXPECT_GT(d.approx_graph_bytes, 0);
    EXPECT_FALSE(d.licence.empty());
    EXPECT_TRUE(d.format == "ogb" || d.format == "npz" || d.format == "reddit" || d.format == "planetoid" ||
                d.format == "pgt-json");
    EXPECT_EQ(d.packaging == Packaging::zip, d.format == "ogb" || d.format == "npz" || d.format == "reddit");
    std::set<std::string> files;
    for (const PublishedFile& f : d.files) {
      EXPECT_TRUE(files.insert(f.name).second) << f.name;
      EXPECT_TRUE(f.url.rfind("https://", 0) == 0 || f.url.rfind("http://", 0) == 0) << f.url;
      EXPECT_TRUE(f.sha256.empty() || is_sha256_hex(f.sha256)) << f.name;
      EXPECT_EQ(f.sha256.empty(), f.bytes < 0) << f.name << ": a known hash comes with its size";
    }
    EXPECT_EQ(d.hash_source.empty(), d.files.front().sha256.empty() && d.files.back().sha256.empty());
  }
  EXPECT_EQ(find_dataset("OGBN-Arxiv").name, "ogbn-arxiv");
  EXPECT_THROW(find_dataset("ogbn-nothing"), UserError);
}

}  // namespace
}  // namespace halogen::download
