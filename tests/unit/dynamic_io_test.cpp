// Dynamic graphs in files: snapshot round trip and validation, the PyTorch-Geometric-Temporal JSON converter
// (exact expected CSRs from hand-made inputs, Chickenpox figures), and the temporal SBM generator
// (determinism per seed, churn 0 keeps every edge, churn fraction, drift).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "core/error.h"
#include "graph/build.h"
#include "io/graph_file.h"
#include "io/temporal.h"
#include "input_test_util.h"
#include "temp_dir_util.h"

namespace fs = std::filesystem;
using halogen::UserError;
using halogen::graph::Csr;
using halogen::graph::Graph;
using halogen::test::message_of;

namespace {

std::string temp_dir() {
  return halogen::test::test_temp_dir("dynamic_io").string();
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

Csr undirected(int64_t n, std::vector<int64_t> src, std::vector<int64_t> dst) {
  halogen::graph::EdgeList edges;
  edges.src = std::move(src);
  edges.dst = std::move(dst);
  return halogen::graph::build_csr(n, edges);
}

// 4 vertices, 3 snapshots: path 0-1-2, then 0-1 and 2-3, then nothing (an empty snapshot is legal in a file).
Graph tiny_dynamic() {
  Graph g;
  g.name = "tiny-dynamic";
  g.num_nodes = 4;
  g.snapshots = {undirected(4, {0, 1}, {1, 2}), undirected(4, {0, 2}, {1, 3}), undirected(4, {}, {})};
  g.adjacency = halogen::io::snapshot_union(4, g.snapshots);
  g.target_steps = 3;
  g.targets = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  return g;
}

std::set<std::pair<int64_t, int64_t>> pairs_of(const Csr& csr) {
  std::set<std::pair<int64_t, int64_t>> out;
  for (int64_t r = 0; r < csr.num_rows; ++r)
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) out.insert({r, csr.indices[e]});
  return out;
}

}  // namespace

TEST(DynamicGraphFile, UnionOfSnapshotsIsExact) {
  const Graph g = tiny_dynamic();
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 3, 5, 6}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 2, 1, 3, 2}));
}

TEST(DynamicGraphFile, RoundTripKeepsSnapshotsAndTargets) {
  const std::string path = temp_dir() + "/tiny_dynamic.h5";
  Graph g = tiny_dynamic();
  g.snapshots[1].weight = {0.5f, 0.5f, 2.0f, 2.0f};  // weighted snapshot
  halogen::io::write_graph(path, g);
  const Graph back = halogen::io::read_graph(path);
  ASSERT_EQ(back.snapshots.size(), 3u);
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(back.snapshots[t].indptr, g.snapshots[t].indptr) << t;
    EXPECT_EQ(back.snapshots[t].indices, g.snapshots[t].indices) << t;
    EXPECT_EQ(back.snapshots[t].weight, g.snapshots[t].weight) << t;
  }
  EXPECT_EQ(back.snapshots[2].nnz(), 0);
  EXPECT_EQ(back.target_steps, 3);
  EXPECT_EQ(back.targets, g.targets);
  EXPECT_EQ(back.adjacency.indices, g.adjacency.indices);
}

TEST(DynamicGraphFile, SnapshotWithOtherNodeCountIsRejected) {
  Graph g = tiny_dynamic();
  g.snapshots[1] = undirected(3, {0}, {1});
  const std::string message = message_of([&] { halogen::io::validate_graph(g, "g.h5"); });
  EXPECT_NE(message.find("g.h5: /snapshots/00001: snapshot has 3 x 3 nodes, but the graph has 4"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(DynamicGraphFile, SnapshotEdgeOutsideUnionIsRejected) {
  Graph g = tiny_dynamic();
  g.snapshots[2] = undirected(4, {0}, {3});
  const std::string message = message_of([&] { halogen::io::validate_graph(g, "g.h5"); });
  EXPECT_NE(message.find("/snapshots/00002/indices: index 0: edge (0, 3) is not in the union graph"),
            std::string::npos)
      << message;
}

TEST(DynamicGraphFile, AsymmetricSnapshotOfUndirectedGraphIsRejected) {
  Graph g = tiny_dynamic();
  halogen::graph::EdgeList one_way;
  one_way.src = {0};
  one_way.dst = {1};
  halogen::graph::BuildOptions directed;
  directed.symmetrize = false;
  g.snapshots[2] = halogen::graph::build_csr(4, one_way, directed);
  const std::string message = message_of([&] { halogen::io::validate_graph(g, "g.h5"); });
  EXPECT_NE(message.find("/snapshots/00002/indices: index 0: edge (0, 1) has no reverse edge"),
            std::string::npos)
      << message;
}

TEST(DynamicGraphFile, TargetStepsMustMatchSnapshots) {
  Graph g = tiny_dynamic();
  g.target_steps = 2;
  g.targets.resize(8);
  const std::string message = message_of([&] { halogen::io::validate_graph(g, "g.h5"); });
  EXPECT_NE(message.find("2 target steps, but 3 snapshots"), std::string::npos) << message;
}

TEST(PgtJson, StaticWeightedEdgesBecomeEverySnapshot) {
  // Directed list with a self-loop and a pair given both ways with different weights (the larger is kept).
  const std::string path = write_text("tiny.json", R"({"edges": [[0, 1], [1, 0], [1, 2], [2, 2]],
      "weights": [0.5, 0.25, 2.0, 9.0], "X": [[1, 2, 3], [4, 5, 6]]})");
  halogen::io::ConvertOptions options;
  options.input = path;
  const Graph g = halogen::io::convert_pgt_json(options);
  EXPECT_EQ(g.num_nodes, 3);
  EXPECT_EQ(g.name, "tiny");
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(g.adjacency.weight, (std::vector<float>{0.5f, 0.5f, 2.0f, 2.0f}));
  ASSERT_EQ(g.snapshots.size(), 2u);
  for (const Csr& s : g.snapshots) {
    EXPECT_EQ(s.indices, g.adjacency.indices);
    EXPECT_EQ(s.weight, g.adjacency.weight);
  }
  EXPECT_EQ(g.target_steps, 2);
  EXPECT_EQ(g.targets, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_NO_THROW(halogen::io::validate_graph(g, path));
}

TEST(PgtJson, NodeIdsGiveTheNodeCountAndFxIsTheSeries) {
  const std::string path = write_text("ids.json", R"({"edges": [[0, 3]], "node_ids": {"a": 0, "b": 1, "c": 2,
      "d": 3}, "FX": [[1, 1, 1, 1]]})");
  halogen::io::ConvertOptions options;
  options.input = path;
  options.directed = true;
  const Graph g = halogen::io::convert_pgt_json(options);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_TRUE(g.directed);
  EXPECT_EQ(pairs_of(g.adjacency), (std::set<std::pair<int64_t, int64_t>>{{0, 3}}));
  EXPECT_FALSE(g.adjacency.weighted());
}

TEST(PgtJson, BadInputsNameFileKeyAndIndex) {
  halogen::io::ConvertOptions options;
  auto error_for = [&](const std::string& text) {
    options.input = write_text("bad.json", text);
    return message_of([&] { halogen::io::convert_pgt_json(options); });
  };
  EXPECT_NE(error_for(R"({"edges": [[0, 1]], "X": [[1, 2], [3]]})")
                .find("\"X\"[1]: expected a list of 2 node values, found 1"),
            std::string::npos);
  EXPECT_NE(
      error_for(R"({"edges": [[0, 5]], "X": [[1, 2]]})").find("\"edges\"[0]: node id 5 out of range [0, 2)"),
      std::string::npos);
  EXPECT_NE(error_for(R"({"edges": [], "X": [[1, 2]]})").find("\"edges\" is empty"), std::string::npos);
  EXPECT_NE(error_for(R"({"edges": [[1, 1]], "X": [[1, 2]]})").find("only self-loops"), std::string::npos);
  EXPECT_NE(error_for(R"({"edges": [[0, 1]], "weights": [1, 2], "X": [[1, 2]]})")
                .find("\"weights\": expected a list of 1"),
            std::string::npos);
  EXPECT_NE(error_for(R"({"edges": [[0, 1]]})").find("none of \"FX\", \"X\" or \"block\""), std::string::npos);
  EXPECT_NE(error_for("{\"edges\": [").find("not valid JSON"), std::string::npos);
}

TEST(PgtJson, ChickenpoxFigures) {
  const std::string path = std::string(HALOGEN_SHARED_DATA_DIR) + "/temporal/chickenpox.json";
  if (!fs::exists(path)) GTEST_SKIP() << path << " absent";
  halogen::io::ConvertOptions options;
  options.input = path;
  const Graph g = halogen::io::convert_pgt_json(options);
  // 102 directed entries = 20 self-loops + 82 others, already symmetric: 82 stored edges (41 pairs).
  EXPECT_EQ(g.num_nodes, 20);
  EXPECT_EQ(g.num_edges(), 82);
  EXPECT_EQ(g.snapshots.size(), 521u);
  EXPECT_EQ(g.target_steps, 521);
  const std::string out = temp_dir() + "/chickenpox.h5";
  halogen::io::write_graph(out, g);
  const Graph back = halogen::io::read_graph(out);
  EXPECT_EQ(back.snapshots.size(), 521u);
  EXPECT_EQ(back.targets, g.targets);
}

namespace {

halogen::io::TemporalSbmParams small_temporal(double churn, double drift, uint64_t seed) {
  halogen::io::TemporalSbmParams p;
  p.sbm.nodes = 300;
  p.sbm.classes = 3;
  p.sbm.avg_degree = 10;
  p.sbm.features = 4;
  p.sbm.seed = seed;
  p.steps = 4;
  p.churn = churn;
  p.drift = drift;
  return p;
}

}  // namespace

TEST(TemporalSbm, SameSeedSameGraphOtherSeedOtherGraph) {
  const Graph a = halogen::io::generate_temporal_sbm(small_temporal(0.3, 0.1, 7));
  const Graph b = halogen::io::generate_temporal_sbm(small_temporal(0.3, 0.1, 7));
  const Graph c = halogen::io::generate_temporal_sbm(small_temporal(0.3, 0.1, 8));
  ASSERT_EQ(a.snapshots.size(), 4u);
  for (size_t t = 0; t < 4; ++t) {
    EXPECT_EQ(a.snapshots[t].indices, b.snapshots[t].indices);
    EXPECT_EQ(a.snapshots[t].indptr, b.snapshots[t].indptr);
  }
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.snapshots[3].indices, c.snapshots[3].indices);
  EXPECT_NO_THROW(halogen::io::validate_graph(a, "a"));
}

TEST(TemporalSbm, ChurnZeroKeepsEverySnapshotEqual) {
  const Graph g = halogen::io::generate_temporal_sbm(small_temporal(0.0, 0.0, 3));
  for (size_t t = 1; t < g.snapshots.size(); ++t) EXPECT_EQ(g.snapshots[t].indices, g.snapshots[0].indices);
  EXPECT_EQ(g.adjacency.indices, g.snapshots[0].indices);  // union of identical snapshots
}

TEST(TemporalSbm, ChurnReplacesThatFractionOfEdges) {
  const double churn = 0.3;
  const Graph g = halogen::io::generate_temporal_sbm(small_temporal(churn, 0.0, 5));
  const auto union_pairs = pairs_of(g.adjacency);
  for (size_t t = 1; t < g.snapshots.size(); ++t) {
    const auto before = pairs_of(g.snapshots[t - 1]), now = pairs_of(g.snapshots[t]);
    int64_t kept = 0;
    for (const auto& p : before) kept += now.count(p);
    const double kept_fraction = static_cast<double>(kept) / static_cast<double>(before.size());
    // ~750 pairs per step: the kept fraction is binomial with sd ~0.017; 0.06 is > 3 sd. New pairs can
    // coincide with kept ones, so the count per step shrinks by at most ~10% (class density ~0.03 here).
    EXPECT_NEAR(kept_fraction, 1 - churn, 0.06) << t;
    EXPECT_GT(static_cast<double>(now.size()), 0.9 * static_cast<double>(before.size())) << t;
    for (const auto& p : now) EXPECT_TRUE(union_pairs.count(p) > 0);
  }
}

TEST(TemporalSbm, DriftMovesAboutThatFractionOfVerticesPerStep) {
  const Graph still = halogen::io::generate_temporal_sbm(small_temporal(0.1, 0.0, 9));
  const Graph moved = halogen::io::generate_temporal_sbm(small_temporal(0.1, 0.5, 9));
  for (int64_t v = 0; v < 300; ++v) EXPECT_EQ(still.labels[v], v % 3);
  int64_t changed = 0;
  for (int64_t v = 0; v < 300; ++v) changed += moved.labels[v] != v % 3;
  // After 3 steps of drift 0.5 over 3 classes, P(class differs) = 2/3 (1 - (-1/2)^3) = 0.75 -> 225 of 300,
  // sd ~7.5; the window is > 4 sd wide on each side.
  EXPECT_GT(changed, 190);
  EXPECT_LT(changed, 260);
}

TEST(TemporalSbm, BadParametersAreUserErrors) {
  EXPECT_THROW(halogen::io::generate_temporal_sbm(small_temporal(1.5, 0, 1)), UserError);
  EXPECT_THROW(halogen::io::generate_temporal_sbm(small_temporal(0.1, -0.1, 1)), UserError);
  auto p = small_temporal(0.1, 0, 1);
  p.steps = 0;
  EXPECT_THROW(halogen::io::generate_temporal_sbm(p), UserError);
}

TEST(SnapTemporal, EdgesFallIntoTimeStepsWithRemappedIds) {
  // Ids 10, 20, 30, 40 -> 0..3; times 100..(100 + 2 steps of 50 s): step 0 [100,150), 1 [150,200), 2
  // [200,250).
  const std::string path = write_text("otc.csv",
                                      "# comment\n10,20,5,100\n20,30,-3,149.5\n30,30,1,160\n40,10,2,150\n"
                                      "20,40,1,249.9\n");
  halogen::io::ConvertOptions options;
  options.input = path;
  const Graph g = halogen::io::convert_snap_temporal(options, 50.0);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.orig_id, (std::vector<int64_t>{10, 20, 30, 40}));
  ASSERT_EQ(g.snapshots.size(), 3u);
  using Pairs = std::set<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(pairs_of(g.snapshots[0]), (Pairs{{0, 1}, {1, 0}, {1, 2}, {2, 1}}));
  EXPECT_EQ(pairs_of(g.snapshots[1]), (Pairs{{3, 0}, {0, 3}}));  // (30,30) is a self-loop, dropped
  EXPECT_EQ(pairs_of(g.snapshots[2]), (Pairs{{1, 3}, {3, 1}}));
  EXPECT_EQ(g.num_edges(), 8);  // union
  EXPECT_FALSE(g.adjacency.weighted());
  EXPECT_NO_THROW(halogen::io::validate_graph(g, path));
  options.directed = true;
  const Graph d = halogen::io::convert_snap_temporal(options, 1000.0);
  ASSERT_EQ(d.snapshots.size(), 1u);
  EXPECT_EQ(pairs_of(d.snapshots[0]), (Pairs{{0, 1}, {1, 2}, {3, 0}, {1, 3}}));
}

TEST(SnapTemporal, EmptyTimeStepAndBadLinesAreUserErrors) {
  halogen::io::ConvertOptions options;
  options.input = write_text("gap.csv", "1,2,1,0\n2,3,1,10\n3,1,1,35\n");
  // 10-second steps: [20, 30) has no edge.
  EXPECT_NE(message_of([&] {
              halogen::io::convert_snap_temporal(options, 10.0);
            }).find("gap.csv: time step 2 ([20, 30) s) has no edges (self-loops aside)"),
            std::string::npos);
  options.input = write_text("loops.csv", "1,2,1,0\n3,3,1,10\n");
  EXPECT_NE(message_of([&] { halogen::io::convert_snap_temporal(options, 10.0); }).find("time step 1"),
            std::string::npos);
  options.input = write_text("cols.csv", "1,2,1\n");
  EXPECT_NE(message_of([&] {
              halogen::io::convert_snap_temporal(options, 10.0);
            }).find("cols.csv: line 1: expected 4 comma-separated columns"),
            std::string::npos);
  options.input = write_text("time.csv", "1,2,1,soon\n");
  EXPECT_NE(message_of([&] {
              halogen::io::convert_snap_temporal(options, 10.0);
            }).find("line 1: column 4: 'soon' is not a number"),
            std::string::npos);
  EXPECT_NE(
      message_of([&] { halogen::io::convert_snap_temporal(options, 0.0); }).find("--time-step must be > 0"),
      std::string::npos);
}
