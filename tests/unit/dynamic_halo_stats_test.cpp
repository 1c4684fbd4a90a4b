// Per-snapshot halo volumes of a dynamic graph: `halogen partition` stores them in meta.json
// ("statistics"/"snapshot_halo_rows": mean, max, per_step_total) and `halogen info DIR` prints them in one
// line. Checked exactly on a hand-made path and against a naive count (remote neighbours per part and step)
// on a churned temporal SBM; a static graph gets neither the key nor the line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/format.h"
#include "graph/build.h"
#include "io/part_file.h"
#include "io/temporal.h"
#include "partition/inspect.h"
#include "partition/partition_dir.h"
#include "partition_dir_util.h"

namespace fs = std::filesystem;
using namespace halogen;
using namespace halogen::partition;

using halogen::test::undirected;

namespace {

std::string temp_dir(const std::string& name) { return halogen::test::fresh_dir("halo_stats", name); }


PartitionResult write_dir(const graph::Graph& g, const std::string& dir, Method method, int32_t parts) {
  return halogen::test::write_partition_dir(g, dir, method, parts, /*seed=*/5);
}

nlohmann::json read_meta(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "meta.json");
  return nlohmann::json::parse(in);
}

std::string info_output(const std::string& dir) {
  testing::internal::CaptureStdout();
  describe_partition_dir(dir, /*check=*/false);
  return testing::internal::GetCapturedStdout();
}

}  // namespace

TEST(SnapshotHaloStats, PathInTwoPartsIsExact) {
  // Path 0-1-2-3 cut into {0,1} | {2,3}. Step 0 has 0-1 and 1-2 (1-2 crosses: part 0 receives 2, part 1
  // receives 1), step 1 has 0-1 and 2-3 (nothing crosses), step 2 has no edges.
  graph::Graph g;
  g.name = "path";
  g.num_nodes = 4;
  g.snapshots = {undirected(4, {0, 1}, {1, 2}), undirected(4, {0, 2}, {1, 3}), undirected(4, {}, {})};
  g.adjacency = io::snapshot_union(4, g.snapshots);
  const std::string dir = temp_dir("path");
  const PartitionResult result = write_dir(g, dir, Method::contiguous, 2);
  EXPECT_EQ(result.stats.snapshot_halo_rows, (std::vector<int64_t>{2, 0, 0}));
  const nlohmann::json rows = read_meta(dir)["statistics"]["snapshot_halo_rows"];
  EXPECT_EQ(rows["per_step_total"].get<std::vector<int64_t>>(), (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(rows["max"].get<int64_t>(), 2);
  EXPECT_DOUBLE_EQ(rows["mean"].get<double>(), 2.0 / 3.0);
  // The union halo is 2 rows as well (1 and 2), so one step needs a third of it on average.
  EXPECT_NE(
      info_output(dir).find("snapshot halo rows (all parts, per step): mean 0.7, max 2 over 3 steps (33% "
                            "of the union halo 2 on average)\n"),
      std::string::npos)
      << info_output(dir);
}

TEST(SnapshotHaloStats, MatchNaiveCountOnChurnedTemporalSbm) {
  io::TemporalSbmParams p;
  p.sbm.nodes = 400;
  p.sbm.classes = 4;
  p.sbm.avg_degree = 6;
  p.sbm.features = 2;
  p.sbm.seed = 11;
  p.steps = 5;
  p.churn = 0.4;
  const graph::Graph g = io::generate_temporal_sbm(p);
  for (const auto& [method, parts] : {std::pair{Method::random, 3}, std::pair{Method::metis, 4}}) {
    const std::string dir = temp_dir(strformat("sbm_%d", parts));
    const PartitionResult result = write_dir(g, dir, method, parts);
    const std::vector<int32_t> owner = io::read_assignment(io::assignment_path(dir), parts, g.num_nodes);
    std::vector<int64_t> expected;
    for (const graph::Csr& s : g.snapshots) {
      int64_t rows = 0;
      for (int32_t q = 0; q < parts; ++q) {
        std::set<int64_t> halo;  // remote neighbours of part q's vertices at this step
        for (int64_t u = 0; u < g.num_nodes; ++u)
          if (owner[u] == q)
            for (int64_t e = s.indptr[u]; e < s.indptr[u + 1]; ++e)
              if (owner[s.indices[e]] != q) halo.insert(s.indices[e]);
        rows += static_cast<int64_t>(halo.size());
      }
      expected.push_back(rows);
    }
    EXPECT_EQ(result.stats.snapshot_halo_rows, expected) << parts;
    const nlohmann::json rows = read_meta(dir)["statistics"]["snapshot_halo_rows"];
    EXPECT_EQ(rows["per_step_total"].get<std::vector<int64_t>>(), expected) << parts;
    EXPECT_EQ(rows["max"].get<int64_t>(), *std::max_element(expected.begin(), expected.end()));
    double total = 0;
    for (int64_t r : expected) total += static_cast<double>(r);
    EXPECT_DOUBLE_EQ(rows["mean"].get<double>(), total / static_cast<double>(expected.size()));
    // Each step's halo is a subset of the union halo, so no step needs more than it.
    EXPECT_LE(rows["max"].get<int64_t>(), result.stats.total_halo);
    EXPECT_GT(rows["max"].get<int64_t>(), 0);
  }
}

TEST(SnapshotHaloStats, StaticGraphHasNoneAndMalformedMetaIsAUserError) {
  graph::Graph g;
  g.name = "static";
  g.num_nodes = 4;
  g.adjacency = undirected(4, {0, 1, 2}, {1, 2, 3});
  const std::string dir = temp_dir("static");
  const PartitionResult result = write_dir(g, dir, Method::contiguous, 2);
  EXPECT_TRUE(result.stats.snapshot_halo_rows.empty());
  nlohmann::json meta = read_meta(dir);
  EXPECT_FALSE(meta["statistics"].contains("snapshot_halo_rows"));
  EXPECT_EQ(info_output(dir).find("snapshot halo rows"), std::string::npos);

  meta["statistics"]["snapshot_halo_rows"] = {{"mean", "many"}};
  std::ofstream(fs::path(dir) / "meta.json") << meta.dump(2);
  try {
    info_output(dir);
    ADD_FAILURE() << "no error for a malformed snapshot_halo_rows";
  } catch (const UserError& e) {
    testing::internal::GetCapturedStdout();
    EXPECT_NE(std::string(e.what()).find("meta.json: \"statistics\"/\"snapshot_halo_rows\": expected"),
              std::string::npos)
        << e.what();
  }
}
