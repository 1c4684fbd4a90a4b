// Converters on tiny hand-written inputs, with the exact graph each must produce.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "core/error.h"
#include "io/convert.h"
#include "io/convert_chunked.h"
#include "io/graph_file.h"
#include "io/npz.h"
#include "io/temporal.h"
#include "temp_dir_util.h"

namespace fs = std::filesystem;
using halogen::graph::Graph;
using halogen::io::ConvertOptions;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = halogen::test::test_temp_dir("io_convert") / name;
  fs::create_directories(dir);
  return dir;
}

void write_text(const fs::path& path, const std::string& text, bool gzip) {
  fs::create_directories(path.parent_path());
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_TRUE(f != nullptr);
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  } else {
    std::ofstream(path) << text;
  }
}

// The tiny graph of tests/io/npz_* and of the OGB CSV case: 5 nodes, edges 0-1, 1-2, 2-2, 3-1, 0-1 (given
// once), node 4 isolated. Undirected result: 0-1, 1-2, 1-3 stored both ways.
void expect_tiny_undirected(const Graph& g) {
  EXPECT_EQ(g.num_nodes, 5);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 4, 5, 6, 6}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 2, 3, 1, 1}));
  EXPECT_EQ(g.num_features, 2);
  EXPECT_EQ(g.features, (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2, 2.25f}));
  EXPECT_EQ(g.labels, (std::vector<int32_t>{1, 0, -1, 2, 0}));
  EXPECT_EQ(g.num_classes, 3);
  EXPECT_EQ(g.train, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g.valid, (std::vector<int64_t>{3}));
  EXPECT_EQ(g.test, (std::vector<int64_t>{4}));
}

fs::path write_tiny_ogb_csv(bool gzip) {
  const fs::path dir = scratch(gzip ? "ogb_gz" : "ogb_plain");
  const std::string ext = gzip ? ".csv.gz" : ".csv";
  write_text(dir / "raw" / ("num-node-list" + ext), "5\n", gzip);
  write_text(dir / "raw" / ("num-edge-list" + ext), "5\n", gzip);
  write_text(dir / "raw" / ("edge" + ext), "0,1\n1,2\n2,2\n3,1\n0,1", gzip);  // no final newline
  write_text(dir / "raw" / ("node-feat" + ext), "0,0.25\n0.5,0.75\n1,1.25\n1.5,1.75\n2,2.25\n", gzip);
  // Node 2 unlabeled: an empty line in one variant, NaN in the other.
  write_text(dir / "raw" / ("node-label" + ext), gzip ? "1\n0.0\n\n2\n0\n" : "1\n0.0\nnan\n2\n0\n", gzip);
  write_text(dir / "split" / "random" / ("train" + ext), "0\n1\n", gzip);
  write_text(dir / "split" / "random" / ("valid" + ext), "3\n", gzip);
  write_text(dir / "split" / "random" / ("test" + ext), "4\n", gzip);
  return dir;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// OGB csv, OGB npz and SNAP are converted straight to a graph file (one pipeline, io/convert_chunked.h): each
// conversion is run into a scratch file, without a limit and with the smallest one, and read back. The two
// files and the file write_graph writes for the graph read back must be the same bytes (the pipeline writes
// datasets and attributes as write_graph does: a change of either shows here).
Graph converted(halogen::io::ConvertSummary (*convert)(const ConvertOptions&, const std::string&),
                ConvertOptions options) {
  const fs::path dir = scratch("converted");
  const std::string path = (dir / "g.h5").string(), bounded = (dir / "bounded.h5").string(),
                    again = (dir / "again.h5").string();
  convert(options, path);
  Graph g = halogen::io::read_graph(path);
  options.memory_limit_bytes = halogen::io::kMinimumConvertLimitBytes;
  convert(options, bounded);
  halogen::io::write_graph(again, g);
  EXPECT_TRUE(file_bytes(path) == file_bytes(bounded)) << options.input << ": the file depends on the limit";
  EXPECT_TRUE(file_bytes(path) == file_bytes(again))
      << options.input << ": the file differs from write_graph's";
  return g;
}

Graph convert_ogb(const ConvertOptions& options) {
  return converted(halogen::io::convert_ogb_to_file, options);
}
Graph convert_ogb_npz(const ConvertOptions& options) {
  return converted(halogen::io::convert_ogb_npz_to_file, options);
}
Graph convert_snap(const ConvertOptions& options) {
  return converted(halogen::io::convert_snap_to_file, options);
}

}  // namespace

TEST(ConvertOgb, TinyCsvGzExact) {
  ConvertOptions options;
  options.input = write_tiny_ogb_csv(true).string();
  const Graph g = convert_ogb(options);
  expect_tiny_undirected(g);
  EXPECT_EQ(g.name, "ogb_gz");
}

TEST(ConvertOgb, TinyPlainCsvDirectedKeepsDirection) {
  ConvertOptions options;
  options.input = write_tiny_ogb_csv(false).string();
  options.directed = true;
  const Graph g = convert_ogb(options);
  EXPECT_TRUE(g.directed);
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 2, 2, 3, 3}));  // 0->1, 1->2, 3->1
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(g.labels, (std::vector<int32_t>{1, 0, -1, 2, 0}));
}

TEST(ConvertOgb, SeveralSplitSchemesNeedSplitFlag) {
  const fs::path dir = write_tiny_ogb_csv(true);
  write_text(dir / "split" / "other" / "train.csv.gz", "2\n", true);
  write_text(dir / "split" / "other" / "valid.csv.gz", "", true);
  write_text(dir / "split" / "other" / "test.csv.gz", "", true);
  ConvertOptions options;
  options.input = dir.string();
  try {
    convert_ogb(options);
    ADD_FAILURE() << "no error";
  } catch (const halogen::UserError& e) {
    EXPECT_NE(std::string(e.what()).find("several split schemes (other, random); choose one with --split"),
              std::string::npos)
        << e.what();
  }
  options.split = "other";
  const Graph g = convert_ogb(options);
  EXPECT_EQ(g.train, (std::vector<int64_t>{2}));
  EXPECT_TRUE(g.valid.empty());
}

TEST(ConvertOgbNpz, StoredAndDeflatedArchivesGiveTheTinyGraph) {
  // npz_narrow_types: int32 edge_index and num_nodes_list, float16 node_feat, 1-d float32 labels.
  // npz_fortran: npz_stored's arrays written by numpy.savez as transposes (np.ascontiguousarray(a.T).T), so
  // edge_index [2, E] and node_feat [N, F] carry fortran_order True and are stored column by column.
  for (const char* variant : {"npz_stored", "npz_deflated", "npz_narrow_types", "npz_fortran"}) {
    SCOPED_TRACE(variant);
    ConvertOptions options;
    options.input = std::string(HALOGEN_SOURCE_DIR) + "/tests/io/" + variant;
    expect_tiny_undirected(convert_ogb_npz(options));
    expect_tiny_undirected(convert_ogb(options));  // the ogb format detects the npz layout
  }
}

TEST(ConvertSnap, RemapsIdsKeepsOriginalsSkipsComments) {
  const fs::path path = scratch("snap") / "tiny.txt";
  write_text(path, "# Directed graph: tiny\n# FromNodeId\tToNodeId\n10 20\n20\t30\n30 30\n  40\t10 \n\n",
             false);
  ConvertOptions options;
  options.input = path.string();
  const Graph g = convert_snap(options);
  EXPECT_EQ(g.name, "tiny");
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.orig_id, (std::vector<int64_t>{10, 20, 30, 40}));
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 2, 4, 5, 6}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 3, 0, 2, 1, 0}));
}

TEST(ConvertSnap, DenseIdsNeedNoOrigIdAndDirectedKeepsDirection) {
  const fs::path path = scratch("snap") / "dense.txt.gz";
  write_text(path, "0 1\n2 0\n1 2 1700000000\n", true);  // a third column (time) is ignored
  ConvertOptions options;
  options.input = path.string();
  options.directed = true;
  const Graph g = convert_snap(options);
  EXPECT_TRUE(g.orig_id.empty());
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 2, 0}));
}

TEST(ConvertSnap, NodesHeaderKeepsIsolatedVertices) {
  // SNAP lists edges only: "# Nodes: 6" says vertices 2 and 5 exist without an edge. They are kept.
  const fs::path path = scratch("snap") / "isolated.txt";
  write_text(path, "# Undirected graph: isolated\n# Nodes: 6 Edges: 2\n# FromNodeId\tToNodeId\n0 1\n3 4\n",
             false);
  ConvertOptions options;
  options.input = path.string();
  const Graph g = convert_snap(options);
  EXPECT_EQ(g.num_nodes, 6);
  EXPECT_TRUE(g.orig_id.empty());
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 2, 2, 3, 4, 4}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 4, 3}));
  // A header the ids contradict (an id >= its count) cannot place isolated vertices: the ids are remapped.
  write_text(path, "# Nodes: 3 Edges: 1\n10 20\n", false);
  const Graph remapped = convert_snap(options);
  EXPECT_EQ(remapped.num_nodes, 2);
  EXPECT_EQ(remapped.orig_id, (std::vector<int64_t>{10, 20}));
}

TEST(ConvertSnap, SpilledRunsGiveTheSameFile) {
  // 200k random lines among 30k sparse ids, self-loops included (their vertex stays): at the 4 MiB limit the
  // entries are spilled in runs and the ids read again; without a limit everything is sorted in memory and
  // the ids are taken from the entries. The same bytes either way (converted() compares them).
  const fs::path path = scratch("snap") / "spilled.txt";
  std::string text = "# sparse ids\n";
  uint64_t x = 88172645463325252ull;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 200000; ++i) {
    const uint64_t a = next() % 30000 * 7919, b = i % 1000 == 0 ? a : next() % 30000 * 7919;
    text += std::to_string(a) + "\t" + std::to_string(b) + "\n";
  }
  text += "999999937 999999937\n";  // a vertex with only a self-loop
  write_text(path, text, false);
  for (const bool directed : {false, true}) {
    ConvertOptions options;
    options.input = path.string();
    options.directed = directed;
    const Graph g = convert_snap(options);
    EXPECT_EQ(g.orig_id.back(), 999999937);
    EXPECT_EQ(g.adjacency.indptr[g.num_nodes], g.adjacency.indptr[g.num_nodes - 1]);  // its row is empty
  }
}

TEST(ConvertSnap, AHeaderFarAboveTheEdgesIsRefused) {
  const fs::path path = scratch("snap") / "huge_header.txt";
  write_text(path, "# Nodes: 100000000000 Edges: 1\n0 1\n", false);
  ConvertOptions options;
  options.input = path.string();
  try {
    convert_snap(options);
    ADD_FAILURE() << "no error";
  } catch (const halogen::UserError& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "the header (# Nodes:) declares 100000000000 vertices, but its 1 edges touch at most 2 of them"),
        std::string::npos)
        << e.what();
  }
}

// A directory where a file is expected says so (it used to read "no such file"), for every kind of reader.
TEST(InputFiles, ADirectoryIsReportedAsOne) {
  const std::string dir = scratch("a_directory").string();
  const auto message = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const halogen::UserError& e) {
      return e.what();
    }
    return "(no error)";
  };
  ConvertOptions options;
  options.input = dir;
  const std::string expected = dir + ": is a directory";
  EXPECT_EQ(message([&] { convert_snap(options); }).rfind(expected, 0), 0u);                   // text reader
  EXPECT_EQ(message([&] { halogen::io::convert_pgt_json(options); }).rfind(expected, 0), 0u);  // JSON
  EXPECT_EQ(message([&] { halogen::io::read_graph(dir); }).rfind(expected, 0), 0u);            // HDF5
  EXPECT_EQ(message([&] { halogen::io::NpzArchive archive(dir); }).rfind(expected, 0), 0u);    // npz
  const std::string missing = dir + "/none.txt";
  options.input = missing;
  EXPECT_EQ(message([&] { convert_snap(options); }), missing + ": no such file");
}

TEST(ConvertMatrixMarket, RealSymmetricBecomesWeightedBothWays) {
  const fs::path path = scratch("mtx") / "tiny.mtx";
  write_text(path,
             "%%MatrixMarket matrix coordinate real symmetric\n% a comment\n4 4 4\n2 1 0.5\n3 1 1.5\n4 4 "
             "9\n4 3 2e0\n",
             false);
  ConvertOptions options;
  options.input = path.string();
  options.directed = true;  // ignored for a symmetric file: it stores one triangle
  const Graph g = halogen::io::convert_matrix_market(options);
  EXPECT_FALSE(g.directed);
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 2, 3, 5, 6}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 2, 0, 0, 3, 2}));
  EXPECT_EQ(g.adjacency.weight, (std::vector<float>{0.5f, 1.5f, 0.5f, 1.5f, 2, 2}));
}

TEST(ConvertMatrixMarket, PatternGeneralDirected) {
  const fs::path path = scratch("mtx") / "pattern.mtx";
  write_text(path, "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n3 1\n", false);
  ConvertOptions options;
  options.input = path.string();
  options.directed = true;
  const Graph g = halogen::io::convert_matrix_market(options);
  EXPECT_TRUE(g.directed);
  EXPECT_FALSE(g.adjacency.weighted());
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0}));
}

TEST(ConvertMatrixMarket, IntegerGeneralUndirectedAndErrorsCarryLineNumbers) {
  const fs::path dir = scratch("mtx");
  write_text(dir / "int.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 3\n2 1 5\n",
             false);
  ConvertOptions options;
  options.input = (dir / "int.mtx").string();
  const Graph g = halogen::io::convert_matrix_market(options);
  EXPECT_EQ(g.adjacency.weight, (std::vector<float>{5, 5}));  // duplicate pair keeps the larger weight
  auto message_of = [&](const std::string& text) {
    write_text(dir / "bad.mtx", text, false);
    options.input = (dir / "bad.mtx").string();
    try {
      halogen::io::convert_matrix_market(options);
    } catch (const halogen::UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string bad = (dir / "bad.mtx").string();
  EXPECT_EQ(message_of("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n0 1\n"),
            bad + ": line 4: index 0 out of range [1, 3] (Matrix Market indices are 1-based)");
  EXPECT_EQ(message_of("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n4 1\n"),
            bad + ": line 3: index 4 out of range [1, 3]");
  EXPECT_EQ(message_of("%%MatrixMarket matrix array real general\n3 3\n"),
            bad + ": line 1: 'array' matrices are not supported (only coordinate)");
  EXPECT_EQ(message_of("%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 1\n"),
            bad + ": line 2: the matrix is 3 x 4; an adjacency matrix must be square");
  EXPECT_EQ(message_of("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n"),
            bad + ": 1 entries, but the size line says 2");
}
