// `convert --preprocess pgt|none` on PyTorch Geometric Temporal JSON: each layout gets the target transform
// its reference loader applies (numbers computed here by hand as numpy would), the record (name, formula,
// per-node offset/scale) survives the graph file round trip and maps the stored values back to the file's,
// WikiMaths and Windmill layouts read, and a value log1p cannot take is one line naming file and place.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/graph_file.h"
#include "io/temporal.h"
#include "input_test_util.h"
#include "pgt_test_util.h"

using halogen::graph::Graph;
using halogen::test::message_of;

namespace {

std::string write_json(const std::string& name, const std::string& text) {
  return halogen::test::write_text_file("pgt_preprocess", name, text);
}

Graph convert(const std::string& path, const std::string& preprocess = "pgt") {
  return halogen::test::convert_pgt(path, preprocess);
}

// numpy's (y - y.mean(axis=0)) / (y.std(axis=0) + eps) of column v of a [T, N] series.
std::vector<double> standardized(const std::vector<std::vector<double>>& y, size_t v, double eps) {
  double mean = 0, squares = 0;
  for (const auto& row : y) mean += row[v];
  mean /= static_cast<double>(y.size());
  for (const auto& row : y) squares += (row[v] - mean) * (row[v] - mean);
  const double scale = std::sqrt(squares / static_cast<double>(y.size())) + eps;
  std::vector<double> out;
  for (const auto& row : y) out.push_back((row[v] - mean) / scale);
  return out;
}

// Checks every stored value against the expected transform of column v, and that stored * scale + offset
// gives the file's value back.
void expect_standardized(const Graph& g, const std::vector<std::vector<double>>& y, double eps) {
  const int64_t n = g.num_nodes;
  ASSERT_EQ(g.preprocess.scale.size(), static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    const std::vector<double> expected = standardized(y, static_cast<size_t>(v), eps);
    for (int64_t t = 0; t < g.target_steps; ++t) {
      EXPECT_NEAR(g.targets[t * n + v], expected[t], 1e-5) << "step " << t << " node " << v;
      EXPECT_NEAR(g.targets[t * n + v] * g.preprocess.scale[v] + g.preprocess.offset[v], y[t][v],
                  1e-5 * (1 + std::fabs(y[t][v])))
          << "step " << t << " node " << v;
    }
  }
}

// England COVID layout: 3 regions over 4 days; region 2 reports the same count every day.
const char* kCovid = R"({
  "time_periods": 4,
  "edge_mapping": {"edge_index": {"0": [[0, 1]], "1": [[1, 2]], "2": [[0, 2]], "3": [[0, 1]]}},
  "y": [[10, 0, 7], [30, 1, 7], [20, 5, 7], [100, 2, 7]]
})";
const std::vector<std::vector<double>> kCovidY = {{10, 0, 7}, {30, 1, 7}, {20, 5, 7}, {100, 2, 7}};

}  // namespace

TEST(PgtPreprocess, EnglandCovidIsStandardisedPerNodeWithTheLoadersEpsilonAndRecorded) {
  const Graph g = convert(write_json("england_covid.json", kCovid));
  EXPECT_EQ(g.preprocess.name, "standardize per node");
  EXPECT_NE(g.preprocess.formula.find("(std_v + 1e-10)"), std::string::npos) << g.preprocess.formula;
  EXPECT_NE(g.preprocess.formula.find("EnglandCovidDatasetLoader"), std::string::npos);
  EXPECT_NE(g.preprocess.formula.find("all 4 steps"), std::string::npos);
  // Regions 0 and 1 as numpy gives them; region 2 (constant) is kept as 0 with scale 1.
  for (size_t v = 0; v < 2; ++v) {
    const std::vector<double> expected = standardized(kCovidY, v, 1e-10);
    for (size_t t = 0; t < 4; ++t) EXPECT_NEAR(g.targets[t * 3 + v], expected[t], 1e-6);
  }
  for (size_t t = 0; t < 4; ++t) EXPECT_EQ(g.targets[t * 3 + 2], 0.0f);
  EXPECT_EQ(g.preprocess.scale[2], 1.0);
  EXPECT_EQ(g.preprocess.offset[2], 7.0);
  EXPECT_NEAR(g.preprocess.offset[0], 40.0, 1e-12);
  for (size_t t = 0; t < 4; ++t)  // stored * scale + offset gives the file's values back
    for (size_t v = 0; v < 3; ++v)
      EXPECT_NEAR(g.targets[t * 3 + v] * g.preprocess.scale[v] + g.preprocess.offset[v], kCovidY[t][v], 1e-4);
}

TEST(PgtPreprocess, NoneKeepsTheValuesAndSaysWhatTheLoaderWouldHaveDone) {
  const Graph g = convert(write_json("england_covid_none.json", kCovid), "none");
  EXPECT_EQ(g.preprocess.name, "none");
  EXPECT_NE(g.preprocess.formula.find("--preprocess none"), std::string::npos) << g.preprocess.formula;
  EXPECT_NE(g.preprocess.formula.find("EnglandCovidDatasetLoader applies"), std::string::npos);
  EXPECT_TRUE(g.preprocess.scale.empty());
  for (size_t t = 0; t < 4; ++t)
    for (size_t v = 0; v < 3; ++v) EXPECT_EQ(g.targets[t * 3 + v], static_cast<float>(kCovidY[t][v]));
  EXPECT_NE(message_of([&] { convert(write_json("covid_bad.json", kCovid), "zscore"); }).find("--preprocess"),
            std::string::npos);
}

TEST(PgtPreprocess, TheRecordSurvivesTheGraphFileAndABadRecordIsRefused) {
  const Graph g = convert(write_json("england_covid_rt.json", kCovid));
  const std::string path = halogen::test::write_text_file("pgt_preprocess", "covid.h5", "");
  halogen::io::write_graph(path, g);
  const Graph back = halogen::io::read_graph(path);
  EXPECT_EQ(back.preprocess.name, g.preprocess.name);
  EXPECT_EQ(back.preprocess.formula, g.preprocess.formula);
  EXPECT_EQ(back.preprocess.offset, g.preprocess.offset);
  EXPECT_EQ(back.preprocess.scale, g.preprocess.scale);
  EXPECT_EQ(back.targets, g.targets);

  Graph bad = g;
  bad.preprocess.scale[1] = 0;
  EXPECT_NE(message_of([&] { halogen::io::validate_graph(bad, "x.h5"); }).find("/node/label_scale"),
            std::string::npos);
  bad = g;
  bad.preprocess.offset.pop_back();
  EXPECT_NE(message_of([&] { halogen::io::validate_graph(bad, "x.h5"); }).find("expected 3 values each"),
            std::string::npos);
}

TEST(PgtPreprocess, MontevideoAndWikiMathsAreStandardisedWithoutEpsilon) {
  const Graph bus = convert(write_json("montevideo_bus.json", R"({
    "nodes": [{"bus_stop": 1, "y": [1, 2, 3, 10]}, {"bus_stop": 2, "y": [0, 0, 5, 0]}],
    "links": [{"source": 1, "target": 2, "weight": 2.5}]})"));
  EXPECT_EQ(bus.preprocess.name, "standardize per node");
  EXPECT_NE(bus.preprocess.formula.find("/ std_v,"), std::string::npos) << bus.preprocess.formula;
  EXPECT_NE(bus.preprocess.formula.find("MontevideoBusDatasetLoader"), std::string::npos);
  expect_standardized(bus, {{1, 0}, {2, 0}, {3, 5}, {10, 0}}, 0.0);

  // WikiMaths: static weighted edges, one object per period with its "y".
  const Graph wiki = convert(write_json("wikivital_mathematics.json", R"({
    "edges": [[0, 1], [1, 2]], "weights": [3, 1], "time_periods": 3,
    "0": {"y": [100, 5, 9]}, "1": {"y": [300, 6, 1]}, "2": {"y": [200, 4, 2]}})"));
  EXPECT_EQ(wiki.num_nodes, 3);
  EXPECT_EQ(wiki.target_steps, 3);
  EXPECT_EQ(wiki.snapshots.size(), 3u);
  EXPECT_EQ(wiki.adjacency.indptr, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(wiki.adjacency.weight, (std::vector<float>{3, 3, 1, 1}));
  EXPECT_NE(wiki.preprocess.formula.find("WikiMathsDatasetLoader"), std::string::npos);
  expect_standardized(wiki, {{100, 5, 9}, {300, 6, 1}, {200, 4, 2}}, 0.0);
  EXPECT_NE(message_of([&] {
              convert(write_json("wiki_gap.json",
                                 R"({"edges": [[0, 1]], "time_periods": 2, "0": {"y": [1, 2]}, "1": {}})"));
            }).find("wiki_gap.json: \"1\"/\"y\": missing"),
            std::string::npos);
}

TEST(PgtPreprocess, WindmillBlockIsStandardisedWithEpsilon) {
  const Graph g = convert(write_json("windmill_output_small.json", R"({
    "edges": [[0, 1]], "weights": [0.5], "block": [[0.1, 0.4], [0.3, 0.2], [0.8, 0.9]]})"));
  EXPECT_EQ(g.preprocess.name, "standardize per node");
  EXPECT_NE(g.preprocess.formula.find("WindmillOutputDatasetLoader"), std::string::npos);
  expect_standardized(g, {{0.1, 0.4}, {0.3, 0.2}, {0.8, 0.9}}, 1e-10);
}

TEST(PgtPreprocess, TwitterTennisTakesLog1pAndRefusesAValueItCannotTake) {
  const char* tennis = R"({"time_periods": 2,
    "0": {"y": [3, 0, 1], "edges": [[0, 1]]}, "1": {"y": [0, 2, 7.5], "edges": [[1, 2]]}})";
  const Graph g = convert(write_json("twitter_tennis_rg17.json", tennis));
  EXPECT_EQ(g.preprocess.name, "log1p");
  EXPECT_NE(g.preprocess.formula.find("TwitterTennisDatasetLoader"), std::string::npos);
  EXPECT_TRUE(g.preprocess.scale.empty());
  const double y[6] = {3, 0, 1, 0, 2, 7.5};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(g.targets[i], static_cast<float>(std::log1p(y[i])));
  const std::string message = message_of([&] {
    convert(write_json("tennis_neg.json", R"({"time_periods": 1, "0": {"y": [3, -1], "edges": [[0, 1]]}})"));
  });
  EXPECT_NE(message.find("tennis_neg.json: \"y\" of period 0, node 1: -1: log(1 + y) needs y > -1"),
            std::string::npos)
      << message;
  // --preprocess none keeps it.
  EXPECT_EQ(convert(write_json("tennis_neg2.json", R"({"time_periods": 1, "0": {"y": [3, -1], "edges": [[0, 1]]}})"),
                    "none")
                .targets[1],
            -1.0f);
}

TEST(PgtPreprocess, ChickenpoxAndPedalMeAreKeptAsTheirLoadersKeepThem) {
  const Graph pox = convert(write_json("chickenpox.json", R"({"edges": [[0, 1]], "FX": [[1, 2], [30, 4]]})"));
  EXPECT_EQ(pox.preprocess.name, "none");
  EXPECT_EQ(pox.preprocess.formula, "the values as given, as PGT's ChickenpoxDatasetLoader");
  EXPECT_EQ(pox.targets, (std::vector<float>{1, 2, 30, 4}));
  const Graph pedal = convert(write_json("pedalme.json", R"({"edges": [[0, 1]], "X": [[1, 2], [30, 4]]})"));
  EXPECT_EQ(pedal.preprocess.formula, "the values as given, as PGT's PedalMeDatasetLoader");
  EXPECT_EQ(pedal.targets, (std::vector<float>{1, 2, 30, 4}));
}
