// `convert --format pgt-json` on PyTorch Geometric Temporal's montevideo_bus.json ("nodes" with
// "bus_stop"/"y", "links" with "source"/"target"/"weight") and twitter_tennis_*.json ("time_periods",
// per-period "edges"/"weights"/"y"/"X") layouts: exact CSRs and [T, N] targets from tiny hand-made fixtures
// shaped like the published files, and the errors naming file, key path and index.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/graph_file.h"
#include "io/temporal.h"
#include "input_test_util.h"
#include "pgt_test_util.h"

namespace fs = std::filesystem;
using halogen::graph::Graph;
using halogen::test::message_of;

namespace {

std::string write_json(const std::string& name, const std::string& text) {
  return halogen::test::write_text_file("pgt_layouts", name, text);
}

// The values as given (the transforms: dynamic_pgt_preprocess_test).
Graph convert(const std::string& path, bool directed = false) {
  return halogen::test::convert_pgt(path, "none", directed);
}

// Three bus stops with string and integer ids (the published file uses integers), 4 hours; links 300->"B"
// (2.5), "B"->300 (1.0: the pair keeps the larger weight), 7->7 (a self-loop, dropped), "B"->7 (4.0).
const char* kMontevideo = R"({
  "nodes": [{"bus_stop": 300, "X": {"y": [1, 2, 3, 4]}, "y": [1, 2, 3, 4]},
            {"bus_stop": "B", "X": {"y": [0, 0, 5, 0]}, "y": [0, 0, 5, 0]},
            {"bus_stop": 7, "X": {"y": [9, 8, 7, 6.5]}, "y": [9, 8, 7, 6.5]}],
  "links": [{"source": 300, "target": "B", "weight": 2.5}, {"source": "B", "target": 300, "weight": 1.0},
            {"source": 7, "target": 7, "weight": 3.0}, {"source": "B", "target": 7, "weight": 4.0}]
})";

// Two periods of 4 accounts: period 0 has 0->1 (weight 2) and 3->3 (self-loop); period 1 has 2->0 and 1->2.
const char* kTennis = R"({
  "time_periods": 2,
  "0": {"X": [[1, 0.0], [1, 0.0], [0, 0.0], [0, 0.0]], "y": [3, 0, 1, 0], "edges": [[0, 1], [3, 3]],
        "weights": [2, 1]},
  "1": {"X": [[1, 0.0], [1, 0.0], [2, 0.5], [0, 0.0]], "y": [0, 2, 0, 7], "edges": [[2, 0], [1, 2]],
        "weights": [1, 5]}
})";

}  // namespace

TEST(PgtJsonMontevideo, NodesInFileOrderLinksByBusStopAndEveryStepTheSameEdges) {
  const std::string path = write_json("montevideo_bus.json", kMontevideo);
  const Graph g = convert(path);
  EXPECT_EQ(g.name, "montevideo_bus");
  ASSERT_EQ(g.num_nodes, 3);
  ASSERT_EQ(g.snapshots.size(), 4u);
  // Vertex 0 = 300, 1 = "B", 2 = 7. Symmetrised, self-loop dropped, 0-1 keeps 2.5.
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(g.adjacency.weight, (std::vector<float>{2.5f, 2.5f, 4.0f, 4.0f}));
  for (const auto& snapshot : g.snapshots) {
    EXPECT_EQ(snapshot.indptr, g.adjacency.indptr);
    EXPECT_EQ(snapshot.indices, g.adjacency.indices);
  }
  // Targets [T, N]: row t holds every node's y[t], raw.
  EXPECT_EQ(g.target_steps, 4);
  EXPECT_EQ(g.targets, (std::vector<float>{1, 0, 9, 2, 0, 8, 3, 5, 7, 4, 0, 6.5f}));
  EXPECT_NO_THROW(halogen::io::validate_graph(g, path));
}

TEST(PgtJsonMontevideo, BadInputsNameFileKeyPathAndIndex) {
  const auto error = [](const std::string& text) {
    const std::string path = write_json("bad_bus.json", text);
    return message_of([&] { convert(path); });
  };
  EXPECT_NE(error(R"({"nodes": [{"bus_stop": 1, "y": [1]}], "links": [{"source": 1, "target": 2}]})")
                .find("bad_bus.json: \"links\"[0]/\"target\": 2 is no node's \"bus_stop\""),
            std::string::npos);
  EXPECT_NE(error(R"({"nodes": [{"bus_stop": 1, "y": [1, 2]}, {"bus_stop": 2, "y": [1]}],
                      "links": [{"source": 1, "target": 2}]})")
                .find("\"nodes\"[1]/\"y\": 1 values, but \"nodes\"[0] has 2"),
            std::string::npos);
  EXPECT_NE(error(R"({"nodes": [{"bus_stop": 1, "y": [1]}, {"bus_stop": 1, "y": [2]}],
                      "links": [{"source": 1, "target": 1}]})")
                .find("\"nodes\"[1]/\"bus_stop\": 1 appears twice"),
            std::string::npos);
  EXPECT_NE(error(R"({"nodes": [{"bus_stop": 1, "y": [1]}, {"bus_stop": 2, "y": [2]}],
                      "links": [{"source": 1, "target": 2, "weight": 1}, {"source": 2, "target": 1}]})")
                .find("\"links\"[1]: \"weight\" must be given on every link or on none"),
            std::string::npos);
  EXPECT_NE(error(R"({"nodes": [{"bus_stop": 1, "y": [1]}, {"bus_stop": 2, "y": ["x"]}],
                      "links": [{"source": 1, "target": 2}]})")
                .find("\"nodes\"[1]/\"y\"[0]: not a finite number"),
            std::string::npos);
}

TEST(PgtJsonTennis, EachPeriodItsOwnSnapshotAndTargets) {
  const std::string path = write_json("twitter_tennis_rg17.json", kTennis);
  const Graph g = convert(path);
  ASSERT_EQ(g.num_nodes, 4);
  ASSERT_EQ(g.snapshots.size(), 2u);
  EXPECT_EQ(g.snapshots[0].indptr, (std::vector<int64_t>{0, 1, 2, 2, 2}));
  EXPECT_EQ(g.snapshots[0].indices, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(g.snapshots[0].weight, (std::vector<float>{2, 2}));
  EXPECT_EQ(g.snapshots[1].indptr, (std::vector<int64_t>{0, 1, 2, 4, 4}));
  EXPECT_EQ(g.snapshots[1].indices, (std::vector<int64_t>{2, 2, 0, 1}));
  EXPECT_EQ(g.snapshots[1].weight, (std::vector<float>{1, 5, 1, 5}));
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 2, 4, 6, 6}));  // union; vertex 3 isolated
  EXPECT_EQ(g.target_steps, 2);
  EXPECT_EQ(g.targets, (std::vector<float>{3, 0, 1, 0, 0, 2, 0, 7}));
  EXPECT_NO_THROW(halogen::io::validate_graph(g, path));
  // Directed: each edge once, in its own direction.
  const Graph d = convert(path, /*directed=*/true);
  EXPECT_EQ(d.snapshots[1].indptr, (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(d.snapshots[1].indices, (std::vector<int64_t>{2, 0}));
}

TEST(PgtJsonTennis, BadInputsNameFileKeyPathAndIndex) {
  const auto error = [](const std::string& text) {
    const std::string path = write_json("bad_tennis.json", text);
    return message_of([&] { convert(path); });
  };
  EXPECT_NE(error(R"({"time_periods": 2, "0": {"y": [1, 2], "edges": [[0, 1]]}})")
                .find("bad_tennis.json: \"1\": missing or not an object (time_periods is 2"),
            std::string::npos);
  EXPECT_NE(error(R"({"time_periods": 1, "0": {"y": [1, 2], "edges": [[0, 2]]}})")
                .find("\"0\"/\"edges\"[0]: node 2 out of range [0, 2)"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"time_periods": 2, "0": {"y": [1, 2], "edges": [[0, 1]]}, "1": {"y": [1], "edges": []}})")
          .find("\"1\"/\"y\": 1 values, but \"0\"/\"y\" has 2"),
      std::string::npos);
  EXPECT_NE(error(R"({"time_periods": 1, "0": {"y": [1, 2], "edges": [[0, 1]], "weights": [1, 2]}})")
                .find("\"0\"/\"weights\": expected a list of 1 numbers"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"time_periods": 1, "0": {"y": [1, 2], "edges": [[1, 1]]}})").find("no period has an edge"),
      std::string::npos);
}
