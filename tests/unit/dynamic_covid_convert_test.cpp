// `convert --format pgt-json` on the per-period layout of PyTorch Geometric Temporal's england_covid.json
// ("time_periods", "edge_mapping"/{"edge_index","edge_weight"}/"<t>", "y"): exact CSRs per period from
// hand-made inputs (self-loops, pairs given both ways, duplicates, an empty period, directed), the union, the
// raw [T, N] targets, the file round trip, and every input error with its file, key path and index.
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
using halogen::graph::Csr;
using halogen::graph::Graph;
using halogen::test::message_of;

namespace {

std::string write_json(const std::string& name, const std::string& text) {
  return halogen::test::write_text_file("covid_convert", name, text);
}

// The values as given (the transforms: dynamic_pgt_preprocess_test).
Graph convert(const std::string& path, bool directed = false) {
  return halogen::test::convert_pgt(path, "none", directed);
}

// 4 regions, 3 periods. Period 0: 0->1 (0.5) and 1->0 (3.0) (one pair, both ways, different weights), a
// self-loop 2->2 and 1->2 (2.0). Period 1: 3->0 twice (1.0 and 4.0). Period 2: only a self-loop.
const char* kThreePeriods = R"({
  "time_periods": 3,
  "edge_mapping": {
    "edge_index": {"0": [[0, 1], [1, 0], [2, 2], [1, 2]], "1": [[3, 0], [3, 0]], "2": [[1, 1]]},
    "edge_weight": {"0": [0.5, 3.0, 9.0, 2.0], "1": [1.0, 4.0], "2": [7.0]}
  },
  "y": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12.5]]
})";

}  // namespace

TEST(PgtJsonPeriods, EachPeriodIsItsOwnSymmetrisedSnapshot) {
  const std::string path = write_json("covid.json", kThreePeriods);
  const Graph g = convert(path);
  EXPECT_EQ(g.name, "covid");
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_FALSE(g.directed);
  ASSERT_EQ(g.snapshots.size(), 3u);
  // Period 0: self-loop dropped; 0-1 keeps the larger weight (3.0) both ways; 1-2 both ways.
  EXPECT_EQ(g.snapshots[0].indptr, (std::vector<int64_t>{0, 1, 3, 4, 4}));
  EXPECT_EQ(g.snapshots[0].indices, (std::vector<int64_t>{1, 0, 2, 1}));
  EXPECT_EQ(g.snapshots[0].weight, (std::vector<float>{3.0f, 3.0f, 2.0f, 2.0f}));
  // Period 1: the duplicate 3->0 keeps 4.0, stored both ways.
  EXPECT_EQ(g.snapshots[1].indptr, (std::vector<int64_t>{0, 1, 1, 1, 2}));
  EXPECT_EQ(g.snapshots[1].indices, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(g.snapshots[1].weight, (std::vector<float>{4.0f, 4.0f}));
  // Period 2: only a self-loop, so an empty snapshot.
  EXPECT_EQ(g.snapshots[2].indptr, (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(g.snapshots[2].nnz(), 0);
  // The union of the three, unweighted.
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 2, 4, 5, 6}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 3, 0, 2, 1, 0}));
  EXPECT_FALSE(g.adjacency.weighted());
  // Targets: "y" as given, [T, N], not standardised.
  EXPECT_EQ(g.target_steps, 3);
  EXPECT_EQ(g.targets, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.5f}));
  EXPECT_TRUE(g.features.empty());
  EXPECT_NO_THROW(halogen::io::validate_graph(g, path));

  const std::string out = write_json("covid.h5", "");
  halogen::io::write_graph(out, g);
  const Graph back = halogen::io::read_graph(out);
  ASSERT_EQ(back.snapshots.size(), 3u);
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(back.snapshots[t].indptr, g.snapshots[t].indptr) << t;
    EXPECT_EQ(back.snapshots[t].indices, g.snapshots[t].indices) << t;
    EXPECT_EQ(back.snapshots[t].weight, g.snapshots[t].weight) << t;
  }
  EXPECT_EQ(back.target_steps, 3);
  EXPECT_EQ(back.targets, g.targets);
}

TEST(PgtJsonPeriods, DirectedKeepsEachDirectionAndItsWeight) {
  const Graph g = convert(write_json("covid_directed.json", kThreePeriods), /*directed=*/true);
  EXPECT_TRUE(g.directed);
  ASSERT_EQ(g.snapshots.size(), 3u);
  EXPECT_EQ(g.snapshots[0].indptr, (std::vector<int64_t>{0, 1, 3, 3, 3}));
  EXPECT_EQ(g.snapshots[0].indices, (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(g.snapshots[0].weight, (std::vector<float>{0.5f, 3.0f, 2.0f}));
  EXPECT_EQ(g.snapshots[1].indptr, (std::vector<int64_t>{0, 0, 0, 0, 1}));
  EXPECT_EQ(g.snapshots[1].indices, (std::vector<int64_t>{0}));
  EXPECT_EQ(g.snapshots[1].weight, (std::vector<float>{4.0f}));
  EXPECT_EQ(g.snapshots[2].nnz(), 0);
  EXPECT_EQ(g.adjacency.indptr, (std::vector<int64_t>{0, 1, 3, 3, 4}));
  EXPECT_EQ(g.adjacency.indices, (std::vector<int64_t>{1, 0, 2, 0}));
  EXPECT_NO_THROW(halogen::io::validate_graph(g, "covid_directed.json"));
}

TEST(PgtJsonPeriods, UnweightedWithNodeIdsAndNoTimePeriods) {
  // node_ids gives N = 5 (vertex 4 is isolated); "time_periods" may be left out (T = rows of "y").
  const Graph g = convert(write_json("ids.json", R"({"node_ids": {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4},
      "edge_mapping": {"edge_index": {"1": [[2, 3]], "0": [[0, 4]]}},
      "y": [[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]})"));
  EXPECT_EQ(g.num_nodes, 5);
  ASSERT_EQ(g.snapshots.size(), 2u);
  EXPECT_EQ(g.snapshots[0].indptr, (std::vector<int64_t>{0, 1, 1, 1, 1, 2}));
  EXPECT_EQ(g.snapshots[0].indices, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(g.snapshots[1].indptr, (std::vector<int64_t>{0, 0, 0, 1, 2, 2}));
  EXPECT_EQ(g.snapshots[1].indices, (std::vector<int64_t>{3, 2}));
  EXPECT_FALSE(g.snapshots[0].weighted());
  EXPECT_EQ(g.target_steps, 2);
}

TEST(PgtJsonPeriods, BadInputsNameFileKeyPathAndIndex) {
  auto expect_error = [](const std::string& text, const std::string& expected) {
    const std::string path = write_json("x.json", text);
    const std::string message = message_of([&] { convert(path); });
    EXPECT_NE(message.find(expected), std::string::npos) << "got: " << message << "\nwanted: " << expected;
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;  // every message starts with the file
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  const std::string y = R"("y": [[1, 2, 3], [4, 5, 6]])";
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": [[2, 0], [1, 3]]}}, )" + y + "}",
               "x.json: \"edge_mapping\"/\"edge_index\"/\"1\"[1]: node 3 out of range [0, 3)");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[-1, 1]], "1": []}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"0\"[0]: node -1 out of range [0, 3)");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1, 2]], "1": []}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"0\"[0]: expected [source, target]");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1.5]], "1": []}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"0\"[0]: not an integer");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]]}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\": no list for period \"1\"");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": [], "2": []}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"2\": not a period in [0, 2)");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "01": []}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"01\": not a period in [0, 2)");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": {}}}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\"/\"1\": expected a list");
  expect_error(R"({"edge_mapping": {"edge_index": [[0, 1]]}, )" + y + "}",
               "\"edge_mapping\"/\"edge_index\": missing or not an object");
  expect_error(R"({"edge_mapping": [], )" + y + "}", "\"edge_mapping\": expected an object");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1], [1, 2]], "1": []},
                   "edge_weight": {"0": [1.0], "1": []}}, )" +
                   y + "}",
               "\"edge_mapping\"/\"edge_weight\"/\"0\": expected 2 numbers (one per edge of "
               "\"edge_index\"/\"0\"), found 1");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1], [1, 2]], "1": []},
                   "edge_weight": {"0": [1.0, "a"], "1": []}}, )" +
                   y + "}",
               "\"edge_mapping\"/\"edge_weight\"/\"0\"[1]: not a finite number");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": []},
                   "edge_weight": {"0": [1.0]}}, )" +
                   y + "}",
               "\"edge_mapping\"/\"edge_weight\": no list for period \"1\"");
  expect_error(R"({"time_periods": 3, "edge_mapping": {"edge_index": {"0": [[0, 1]], "1": []}}, )" + y + "}",
               "\"time_periods\" is 3, but \"y\" has 2 rows");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": []}}, "y": [[1, 2, 3], [4, 5]]})",
               "\"y\"[1]: expected a list of 3 node values, found 2");
  expect_error(
      R"({"edge_mapping": {"edge_index": {"0": [[0, 1]], "1": []}}, "y": [[1, 2, 3], [4, 5, null]]})",
      "\"y\"[1][2]: not a finite number");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[0, 1]]}}})", "\"y\" (the node series");
  expect_error(R"({"edge_mapping": {"edge_index": {"0": [[1, 1]], "1": []}}, )" + y + "}",
               "no period has an edge (self-loops aside)");
}
