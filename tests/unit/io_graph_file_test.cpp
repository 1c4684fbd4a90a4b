// Graph file: round trip, atomic write, and every validation rule on read (message names file, dataset,
// index).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "graph/build.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "temp_dir_util.h"

namespace fs = std::filesystem;
using halogen::UserError;
using halogen::graph::Graph;

namespace {

std::string temp_dir() {
  return halogen::test::test_temp_dir("io_graph_file").string();
}

Graph tiny_graph() {
  Graph g;
  g.name = "tiny";
  g.num_nodes = 4;
  g.num_classes = 3;
  halogen::graph::EdgeList edges;
  edges.src = {0, 1, 2};
  edges.dst = {1, 2, 3};
  g.adjacency = halogen::graph::build_csr(4, edges);
  g.num_features = 2;
  g.features = {0, 1, 2, 3, 4, 5, 6, 7};
  g.labels = {0, 2, -1, 1};
  g.train = {0, 1};
  g.valid = {3};
  g.test = {2};
  return g;
}

// Writes a valid file, lets `corrupt` overwrite one dataset/attribute, and returns read_graph's message.
std::string read_error_after(const std::function<void(halogen::h5::File&)>& corrupt) {
  const std::string path = temp_dir() + "/corrupt.h5";
  halogen::io::write_graph(path, tiny_graph());
  {
    halogen::h5::File file(path, halogen::h5::Mode::create);  // rewrite from scratch with one defect
    const Graph g = tiny_graph();
    file.set_attr("format", std::string("halogen.graph"));
    file.set_attr("version", halogen::io::kGraphFileVersion);
    file.set_attr("name", g.name);
    file.set_attr("num_nodes", g.num_nodes);
    file.set_attr("num_edges", g.num_edges());
    file.set_attr("directed", int64_t{0});
    file.set_attr("num_classes", int64_t{3});
    file.write("/csr/indptr", g.adjacency.indptr);
    file.write("/csr/indices", g.adjacency.indices);
    file.write("/node/feat", g.features.data(), {4, 2});
    file.write("/node/label", g.labels);
    file.write("/split/train", g.train);
    file.write("/split/valid", g.valid);
    file.write("/split/test", g.test);
    corrupt(file);
  }
  try {
    halogen::io::read_graph(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(GraphFile, RoundTripKeepsEverything) {
  const std::string path = temp_dir() + "/tiny.h5";
  Graph g = tiny_graph();
  g.orig_id = {10, 20, 30, 40};
  halogen::io::write_graph(path, g);
  const Graph r = halogen::io::read_graph(path);
  EXPECT_EQ(r.name, "tiny");
  EXPECT_EQ(r.num_nodes, 4);
  EXPECT_FALSE(r.directed);
  EXPECT_EQ(r.num_classes, 3);
  EXPECT_EQ(r.adjacency.indptr, g.adjacency.indptr);
  EXPECT_EQ(r.adjacency.indices, g.adjacency.indices);
  EXPECT_EQ(r.num_features, 2);
  EXPECT_EQ(r.features, g.features);
  EXPECT_EQ(r.labels, g.labels);
  EXPECT_EQ(r.train, g.train);
  EXPECT_EQ(r.valid, g.valid);
  EXPECT_EQ(r.test, g.test);
  EXPECT_EQ(r.orig_id, g.orig_id);
  halogen::h5::File file(path, halogen::h5::Mode::read);
  EXPECT_EQ(file.attr_string("format"), "halogen.graph");
  EXPECT_EQ(file.attr_int("format_version"), 2);
  EXPECT_FALSE(file.has_attr("version"));
  EXPECT_EQ(file.attr_int("num_edges"), 6);
}

TEST(GraphFile, RoundTripRegressionTargetsWeightsAndSnapshots) {
  const std::string path = temp_dir() + "/dyn.h5";
  Graph g = tiny_graph();
  g.labels.clear();
  g.num_classes = 0;
  g.directed = true;
  g.adjacency.weight.assign(g.adjacency.indices.size(), 0.5f);
  g.targets = {1, 2, 3, 4, 5, 6, 7, 8};
  g.target_steps = 2;
  g.snapshots.push_back(g.adjacency);
  g.snapshots.push_back(halogen::graph::build_csr(4, halogen::graph::EdgeList{}));
  halogen::io::write_graph(path, g);
  const Graph r = halogen::io::read_graph(path);
  EXPECT_TRUE(r.directed);
  EXPECT_EQ(r.targets, g.targets);
  EXPECT_EQ(r.target_steps, 2);
  EXPECT_EQ(r.adjacency.weight, g.adjacency.weight);
  ASSERT_EQ(r.snapshots.size(), 2u);
  EXPECT_EQ(r.snapshots[0].indices, g.adjacency.indices);
  EXPECT_EQ(r.snapshots[1].indptr, (std::vector<int64_t>{0, 0, 0, 0, 0}));
}

TEST(GraphFile, InvalidGraphIsNotWrittenAndLeavesNoFile) {
  const std::string dir = temp_dir() + "/atomic";
  fs::create_directories(dir);
  Graph g = tiny_graph();
  g.labels[1] = 7;
  EXPECT_THROW(halogen::io::write_graph(dir + "/bad.h5", g), UserError);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(GraphFile, ReadRejectsEachViolationWithFileDatasetAndIndex) {
  using halogen::h5::File;
  auto expect_message = [](const std::string& message, const std::string& wanted) {
    EXPECT_NE(message.find("corrupt.h5"), std::string::npos) << message;
    EXPECT_NE(message.find(wanted), std::string::npos) << message << "\n  wanted: " << wanted;
  };
  expect_message(read_error_after([](File& f) { f.set_attr("format", std::string("other")); }),
                 "not a Halogen graph file");
  // read_error_after writes the root attribute version, as files did before format_version: still read.
  EXPECT_EQ(read_error_after([](File&) {}), "no error");
  expect_message(read_error_after([](File& f) { f.set_attr("version", int64_t{3}); }),
                 "version 3 is not supported");
  expect_message(read_error_after([](File& f) { f.set_attr("format_version", int64_t{3}); }),
                 "version 3 is not supported");  // format_version, when present, is the one read
  expect_message(read_error_after([](File& f) { f.set_attr("version", int64_t{1}); }),
                 "graph file version 1, written by an older Halogen without checksums: convert or generate it "
                 "again");
  expect_message(read_error_after([](File& f) { f.set_attr("num_nodes", int64_t{5}); }),
                 "/csr/indptr: expected shape [6], found [5]");
  expect_message(read_error_after([](File& f) { f.set_attr("num_edges", int64_t{5}); }), "num_edges 5 != 6");
  expect_message(read_error_after([](File& f) { f.set_attr("num_classes", int64_t{2}); }),
                 "/node/label: index 1: label 2 out of range [-1, 2)");
}

TEST(GraphFile, ValidateNamesTheFirstBadIndex) {
  auto message_of = [](const Graph& g) {
    try {
      halogen::io::validate_graph(g, "g.h5");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Graph g = tiny_graph();
  g.adjacency.indices[3] = 9;
  EXPECT_EQ(message_of(g), "g.h5: /csr/indices: index 3 (row 2): column 9 out of range [0, 4)");
  g = tiny_graph();
  std::swap(g.adjacency.indices[3], g.adjacency.indices[4]);
  EXPECT_EQ(message_of(g),
            "g.h5: /csr/indices: index 4 (row 2): columns not sorted or duplicated (1 after 3)");
  g = tiny_graph();
  g.adjacency.indptr[2] = 1;
  g.adjacency.indptr[1] = 2;
  EXPECT_EQ(message_of(g), "g.h5: /csr/indptr: index 2: decreases (1 after 2)");
  g = tiny_graph();
  g.adjacency.indptr[4] = 5;
  EXPECT_EQ(message_of(g), "g.h5: /csr/indptr: index 4: last entry 5 != 6 edges in /csr/indices");
  g = tiny_graph();
  g.features[5] = NAN;
  EXPECT_EQ(message_of(g), "g.h5: /node/feat: row 2, column 1: not finite");
  g = tiny_graph();
  g.labels[3] = -2;
  EXPECT_EQ(message_of(g), "g.h5: /node/label: index 3: label -2 out of range [-1, 3) (num_classes 3)");
  g = tiny_graph();
  g.test = {2, 2};
  EXPECT_EQ(message_of(g), "g.h5: /split/test: index 1: node id 2 appears twice");
  g = tiny_graph();
  g.valid = {3, 4};
  EXPECT_EQ(message_of(g), "g.h5: /split/valid: index 1: node id 4 out of range [0, 4)");
  g = tiny_graph();
  g.adjacency.indices[5] = 1;  // row 3 now holds (3,1) instead of (3,2): (2,3) lost its reverse first
  EXPECT_EQ(message_of(g),
            "g.h5: /csr/indices: index 4: edge (2, 3) has no reverse edge, but the graph is undirected");
}

TEST(GraphFile, SparseFeaturesAreStoredCompressedAndReadBackExactly) {
  const std::string path = temp_dir() + "/bow.h5";
  Graph g = tiny_graph();
  g.num_features = 2000;  // bag-of-words-like 0/1 rows: deflate shrinks them many times
  g.features.assign(4 * 2000, 0.0f);
  for (int64_t i = 0; i < 4 * 2000; i += 37) g.features[i] = 1.0f;
  halogen::io::write_graph(path, g);
  EXPECT_EQ(halogen::io::read_graph(path).features, g.features);
  halogen::h5::File file(path, halogen::h5::Mode::read);
  EXPECT_LT(file.storage_bytes("/node/feat"), 4 * 2000 * 4 / 4);
}
