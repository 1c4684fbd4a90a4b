// Snapshot shards of dynamic graphs: exact expected shards on a path whose snapshots differ, then an
// independent naive reference on a generated temporal SBM for every part, snapshot, method and P (edges,
// halos as subsets of the union halo, send plans equal to the receivers' halo groups, degrees, targets), the
// write/read round trip through a partition directory, and corrupted snapshot shards being rejected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <set>

#include "core/error.h"
#include "graph/build.h"
#include "io/part_file.h"
#include "io/temporal.h"
#include "partition/check.h"
#include "partition/halo_plan.h"
#include "partition/partition_dir.h"
#include "partition_dir_util.h"
#include "partition/snapshot_shard.h"
#include "partition/snapshot_weight.h"

namespace fs = std::filesystem;
using namespace halogen;
using namespace halogen::partition;

using halogen::test::undirected;

namespace {

std::string temp_dir(const std::string& name) { return halogen::test::fresh_dir("dynamic_partition", name); }


PartitionResult write_dir(const graph::Graph& g, const std::string& dir, Method method, int32_t parts) {
  return halogen::test::write_partition_dir(g, dir, method, parts, /*seed=*/3);
}

// Global id of a snapshot-local column of `shard`.
int64_t global_of(const graph::Shard& shard, const graph::ShardSnapshot& s, int32_t local) {
  return local < shard.num_owned() ? shard.owned_gid[local]
                                   : shard.halo_gid[s.halo_rows[local - shard.num_owned()]];
}

// Checks every shard snapshot against the global snapshots with naive set computations.
void expect_matches_reference(const graph::Graph& g, const std::vector<graph::Shard>& shards) {
  const int32_t parts = static_cast<int32_t>(shards.size());
  std::vector<int32_t> owner(static_cast<size_t>(g.num_nodes));
  for (const auto& shard : shards)
    for (int64_t v : shard.owned_gid) owner[v] = shard.part;
  for (size_t t = 0; t < g.snapshots.size(); ++t) {
    const graph::Csr& global = g.snapshots[t];
    for (const auto& shard : shards) {
      ASSERT_EQ(shard.snapshots.size(), g.snapshots.size());
      const graph::ShardSnapshot& s = shard.snapshots[t];
      // Halo: exactly the remote endpoints of owned rows at step t, grouped by owner, ascending within.
      std::set<std::pair<int32_t, int64_t>> expected_halo;
      for (int64_t u : shard.owned_gid)
        for (int64_t e = global.indptr[u]; e < global.indptr[u + 1]; ++e)
          if (owner[global.indices[e]] != shard.part)
            expected_halo.insert({owner[global.indices[e]], global.indices[e]});
      using Halo = std::vector<std::pair<int32_t, int64_t>>;
      Halo halo;
      for (int32_t q = 0; q < parts; ++q)
        for (int64_t h = s.plan.recv_offsets[q]; h < s.plan.recv_offsets[q + 1]; ++h)
          halo.push_back({q, shard.halo_gid[s.halo_rows[h]]});
      EXPECT_EQ(halo, Halo(expected_halo.begin(), expected_halo.end()))
          << "part " << shard.part << " step " << t;
      // Edges and weights of every owned row, and degrees.
      for (int64_t i = 0; i < shard.num_owned(); ++i) {
        const int64_t u = shard.owned_gid[i];
        std::vector<std::pair<int64_t, float>> expected, got;
        for (int64_t e = global.indptr[u]; e < global.indptr[u + 1]; ++e)
          expected.push_back({global.indices[e], global.weighted() ? global.weight[e] : 0.0f});
        for (int64_t e = s.indptr[i]; e < s.indptr[i + 1]; ++e) {
          got.push_back({global_of(shard, s, s.indices[e]), s.weight.empty() ? 0.0f : s.weight[e]});
          if (e > s.indptr[i]) {
            EXPECT_LT(s.indices[e - 1], s.indices[e]);
          }
        }
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, expected) << "part " << shard.part << " step " << t << " vertex " << u;
        EXPECT_EQ(s.degree_owned[i], degree_without_self_loop(global, u));
      }
      for (int64_t h = 0; h < s.num_halo(); ++h)
        EXPECT_EQ(s.degree_halo[h], degree_without_self_loop(global, shard.halo_gid[s.halo_rows[h]]));
      // Sends: what this part sends to q is q's snapshot halo group from this part, in q's order.
      for (int32_t q = 0; q < parts; ++q) {
        const graph::ShardSnapshot& r = shards[q].snapshots[t];
        std::vector<int64_t> sent, wanted;
        for (int64_t k = s.plan.send_offsets[q]; k < s.plan.send_offsets[q + 1]; ++k)
          sent.push_back(shard.owned_gid[s.plan.send_idx[k]]);
        for (int64_t h = r.plan.recv_offsets[shard.part]; h < r.plan.recv_offsets[shard.part + 1]; ++h)
          wanted.push_back(shards[q].halo_gid[r.halo_rows[h]]);
        EXPECT_EQ(sent, wanted) << "from " << shard.part << " to " << q << " step " << t;
      }
    }
  }
}

}  // namespace

// Path 0-1-2-3 split {0,1} | {2,3}. Step 0 has only 1-2 (the cut edge), step 1 only 0-1 and 2-3 (no halo).
TEST(SnapshotShard, PathSnapshotsGiveExactShards) {
  graph::Graph g;
  g.num_nodes = 4;
  g.snapshots = {undirected(4, {1}, {2}), undirected(4, {0, 2}, {1, 3})};
  g.adjacency = io::snapshot_union(4, g.snapshots);
  const HaloPlan plan = build_halo_plan(g.adjacency, {0, 0, 1, 1}, 2);
  const graph::Shard a = build_shard(g, plan, 0);
  const auto snaps = build_shard_snapshots(g, plan, a);
  ASSERT_EQ(snaps.size(), 2u);
  EXPECT_EQ(a.halo_gid, (std::vector<int64_t>{2}));
  EXPECT_EQ(snaps[0].halo_rows, (std::vector<int64_t>{0}));
  EXPECT_EQ(snaps[0].plan.recv_offsets, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(snaps[0].plan.send_idx, (std::vector<int32_t>{1}));
  EXPECT_EQ(snaps[0].plan.send_offsets, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(snaps[0].indptr, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(snaps[0].indices, (std::vector<int32_t>{2}));
  EXPECT_EQ(snaps[0].degree_owned, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(snaps[0].degree_halo, (std::vector<int64_t>{1}));
  EXPECT_TRUE(snaps[1].halo_rows.empty());  // a step with no halo at all
  EXPECT_EQ(snaps[1].plan.recv_offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(snaps[1].plan.send_idx.empty());
  EXPECT_EQ(snaps[1].indptr, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(snaps[1].indices, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(snaps[1].degree_owned, (std::vector<int64_t>{1, 1}));
}

TEST(SnapshotShard, MatchesNaiveReferenceForEveryMethodAndPartCount) {
  io::TemporalSbmParams p;
  p.sbm.nodes = 200;
  p.sbm.classes = 4;
  p.sbm.avg_degree = 6;
  p.sbm.features = 2;
  p.steps = 3;
  p.churn = 0.4;
  p.drift = 0.2;
  graph::Graph g = io::generate_temporal_sbm(p);
  g.snapshots[2] = graph::Csr{};  // an empty snapshot
  g.snapshots[2].num_rows = g.snapshots[2].num_cols = g.num_nodes;
  g.snapshots[2].indptr.assign(static_cast<size_t>(g.num_nodes) + 1, 0);
  for (Method method : {Method::metis, Method::random, Method::contiguous}) {
    for (int32_t parts : {1, 2, 5}) {
      const HaloPlan plan = build_halo_plan(g.adjacency,
                                            assign_parts(g,
                                                         [&] {
                                                           AssignOptions o;
                                                           o.method = method;
                                                           o.num_parts = parts;
                                                           o.seed = 3;
                                                           return o;
                                                         }()),
                                            parts);
      std::vector<graph::Shard> shards;
      for (int32_t q = 0; q < parts; ++q) {
        shards.push_back(build_shard(g, plan, q));
        shards.back().snapshots = build_shard_snapshots(g, plan, shards.back());
      }
      SCOPED_TRACE(std::string(method_name(method)) + " P=" + std::to_string(parts));
      expect_matches_reference(g, shards);
    }
  }
}

TEST(SnapshotShard, DirectoryRoundTripKeepsSnapshotsAndTargets) {
  // Weighted, directed dynamic graph with a [T, N] target series.
  graph::Graph g;
  g.num_nodes = 6;
  g.directed = true;
  graph::BuildOptions keep;
  keep.symmetrize = false;
  graph::EdgeList e0, e1;
  e0.src = {0, 1, 3, 5};
  e0.dst = {1, 4, 2, 0};
  e0.weight = {1, 2, 3, 4};
  e1.src = {0, 4};
  e1.dst = {5, 1};
  e1.weight = {5, 6};
  g.snapshots = {graph::build_csr(6, e0, keep), graph::build_csr(6, e1, keep)};
  g.adjacency = io::snapshot_union(6, g.snapshots);
  g.target_steps = 2;
  for (int i = 0; i < 12; ++i) g.targets.push_back(static_cast<float>(i));
  const std::string dir = temp_dir("roundtrip");
  write_dir(g, dir, Method::contiguous, 2);
  std::vector<graph::Shard> shards = {io::read_shard(dir, 0), io::read_shard(dir, 1)};
  expect_matches_reference(g, shards);
  EXPECT_FALSE(shards[0].snapshots[0].weight.empty());
  // Targets of owned vertices, [T, n_own]: part 0 owns 0,1,2.
  EXPECT_EQ(shards[0].target_steps, 2);
  EXPECT_EQ(shards[0].targets, (std::vector<float>{0, 1, 2, 6, 7, 8}));
}

// A series standardised per node by the converter (convert --preprocess): each shard carries its owned
// vertices' offset/scale (/node/label_offset, /node/label_scale) and the transform's name from meta.json, so
// that `train` can report errors in the source's units; `info DIR --check` compares them with the graph's.
graph::Graph standardised_path_graph() {
  graph::Graph g;
  g.num_nodes = 5;
  g.snapshots = {undirected(5, {0, 2}, {1, 3}), undirected(5, {1, 3}, {2, 4})};
  g.adjacency = io::snapshot_union(5, g.snapshots);
  g.target_steps = 2;
  for (int i = 0; i < 10; ++i) g.targets.push_back(0.25f * static_cast<float>(i) - 1.0f);
  g.preprocess.name = "standardize per node";
  g.preprocess.formula = "(y - mean_v) / std_v";
  g.preprocess.offset = {10, -20, 30.5, 0, 1e6};
  g.preprocess.scale = {2, 0.5, 7, 1, 1e-10};
  return g;
}

TEST(SnapshotShard, StandardisationRecordFollowsTheOwnedVertices) {
  const graph::Graph g = standardised_path_graph();
  const std::string dir = temp_dir("record");
  write_dir(g, dir, Method::contiguous, 2);
  EXPECT_NO_THROW(check_partition_dir(dir, g));
  for (int part = 0; part < 2; ++part) {
    const graph::Shard shard = io::read_shard(dir, part);
    EXPECT_EQ(shard.target_preprocess, "standardize per node");
    ASSERT_EQ(static_cast<int64_t>(shard.target_scale.size()), shard.num_owned());
    ASSERT_EQ(static_cast<int64_t>(shard.target_offset.size()), shard.num_owned());
    for (int64_t i = 0; i < shard.num_owned(); ++i) {
      EXPECT_EQ(shard.target_offset[i], g.preprocess.offset[shard.owned_gid[i]]);  // float64 kept exactly
      EXPECT_EQ(shard.target_scale[i], g.preprocess.scale[shard.owned_gid[i]]);
    }
  }
  // log1p: the name alone (nothing per node).
  graph::Graph log_graph = g;
  log_graph.preprocess = {"log1p", "log(1 + y)", {}, {}};
  const std::string log_dir = temp_dir("record_log1p");
  write_dir(log_graph, log_dir, Method::contiguous, 2);
  const graph::Shard log_shard = io::read_shard(log_dir, 1);
  EXPECT_EQ(log_shard.target_preprocess, "log1p");
  EXPECT_TRUE(log_shard.target_scale.empty());
}

TEST(SnapshotShard, ShardWithoutTheRecordStillReads) {
  // A partition made before shards carried offset/scale: the transform's name only (train then reports no
  // figures in the source's units), and `info DIR --check` accepts it.
  const graph::Graph g = standardised_path_graph();
  const std::string dir = temp_dir("record_old");
  write_dir(g, dir, Method::contiguous, 2);
  graph::Shard shard = io::read_shard(dir, 0);
  shard.target_offset.clear();
  shard.target_scale.clear();
  io::write_shard(io::shard_path(dir, 0), shard);
  const graph::Shard old = io::read_shard(dir, 0);
  EXPECT_EQ(old.target_preprocess, "standardize per node");
  EXPECT_TRUE(old.target_scale.empty() && old.target_offset.empty());
  EXPECT_NO_THROW(check_partition_dir(dir, g));
}

TEST(SnapshotShard, BadStandardisationRecordIsRejectedWithFileAndDataset) {
  const graph::Graph g = standardised_path_graph();
  const std::string dir = temp_dir("record_bad");
  write_dir(g, dir, Method::contiguous, 2);
  const graph::Shard good = io::read_shard(dir, 1);
  ASSERT_GE(good.num_owned(), 2);
  const auto expect_rejected = [&](const graph::Shard& shard, const std::string& wanted) {
    io::write_shard(io::shard_path(dir, 1), shard);
    try {
      io::read_shard(dir, 1);
      FAIL() << "no error for " << wanted;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("part-00001.h5: " + wanted), std::string::npos) << e.what();
    }
  };
  graph::Shard shard = good;
  shard.target_scale[1] = 0;
  expect_rejected(shard, "/node/label_scale: value 0.000000 at index 1 is not a finite positive scale");
  shard = good;
  shard.target_scale[0] = -std::numeric_limits<double>::infinity();
  expect_rejected(shard, "/node/label_scale: value -inf at index 0");
  shard = good;
  shard.target_offset[1] = std::numeric_limits<double>::quiet_NaN();
  expect_rejected(shard, "/node/label_offset: not finite at index 1");
  shard = good;
  shard.target_offset.pop_back();
  shard.target_scale.pop_back();
  expect_rejected(shard, "/node/label_offset: length differs from /owned/gid");
  // Readable but not the graph's: `info DIR --check` names it.
  shard = good;
  shard.target_scale[0] *= 2;
  io::write_shard(io::shard_path(dir, 1), shard);
  try {
    check_partition_dir(dir, g);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("part-00001.h5: invariant violated: /node/label_offset or "
                                         "/node/label_scale differs from the graph's at local row 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(SnapshotShard, CorruptSnapshotShardIsRejectedWithFileAndDataset) {
  graph::Graph g;
  g.num_nodes = 4;
  g.snapshots = {undirected(4, {1}, {2}), undirected(4, {0, 2}, {1, 3})};
  g.adjacency = io::snapshot_union(4, g.snapshots);
  const std::string dir = temp_dir("corrupt");
  write_dir(g, dir, Method::contiguous, 2);
  graph::Shard shard = io::read_shard(dir, 0);
  shard.snapshots[0].halo_rows = {5};  // outside the union halo (1 row)
  io::write_shard(io::shard_path(dir, 0), shard);
  try {
    io::read_shard(dir, 0);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("part-00000.h5: /snapshots/00000/halo/rows: value 5"),
              std::string::npos)
        << e.what();
  }
}

// Undirected path 0-1-2 plus 2-3: (0,1) in both snapshots, (1,2) in one, (2,3) in none of them is impossible
// (snapshots are subsets of the union), so (2,3) is in the second only.
TEST(SnapshotWeight, CountsSnapshotsHoldingEachEdge) {
  graph::Graph g;
  g.num_nodes = 4;
  g.snapshots = {undirected(4, {0, 1}, {1, 2}), undirected(4, {0, 2}, {1, 3})};
  g.adjacency = io::snapshot_union(4, g.snapshots);
  const std::vector<int32_t> xadj = {0, 1, 3, 5, 6}, adjncy = {1, 0, 2, 1, 3, 2};
  EXPECT_EQ(snapshot_edge_counts(g, xadj, adjncy), (std::vector<int32_t>{2, 2, 1, 1, 1, 1}));
  // Directed: 0->1 in both, 1->0 in the second: entries (0,1) and (1,0) both weigh 3.
  graph::Graph d;
  d.num_nodes = 2;
  d.directed = true;
  graph::BuildOptions keep;
  keep.symmetrize = false;
  graph::EdgeList a, b;
  a.src = {0};
  a.dst = {1};
  b.src = {0, 1};
  b.dst = {1, 0};
  d.snapshots = {graph::build_csr(2, a, keep), graph::build_csr(2, b, keep)};
  d.adjacency = io::snapshot_union(2, d.snapshots);
  EXPECT_EQ(snapshot_edge_counts(d, {0, 1, 2}, {1, 0}), (std::vector<int32_t>{3, 3}));
}

// 8-cycle whose edges (1,2) and (5,6) exist in one snapshot of three, the others in all three: the
// balanced 2-way cut of least snapshot weight cuts exactly those two edges ({2,3,4,5} | {6,7,0,1}), while
// unweighted every pair of opposite edges would cut as well.
TEST(SnapshotWeight, MetisCutsTheEdgesPresentInFewestSnapshots) {
  graph::Graph g;
  g.num_nodes = 8;
  const graph::Csr all = undirected(8, {0, 2, 3, 4, 6, 7}, {1, 3, 4, 5, 7, 0});
  g.snapshots = {undirected(8, {0, 1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7, 0}), all, all};
  g.adjacency = io::snapshot_union(8, g.snapshots);
  AssignOptions options;
  options.method = Method::metis;
  options.num_parts = 2;
  // Default imbalance 1.03: 8 vertices allow at most 4 per part (1.0 is refused by METIS: ufactor 0).
  const std::vector<int32_t> part = assign_parts(g, options);
  for (int64_t v : {3, 4, 5}) EXPECT_EQ(part[v], part[2]) << v;
  for (int64_t v : {7, 0, 1}) EXPECT_EQ(part[v], part[6]) << v;
  EXPECT_NE(part[2], part[6]);
}

TEST(SnapshotShard, DirectoryCheckAcceptsGoodAndNamesABadSnapshotShard) {
  io::TemporalSbmParams p;
  p.sbm.nodes = 120;
  p.sbm.classes = 3;
  p.sbm.avg_degree = 6;
  p.steps = 3;
  p.churn = 0.5;
  const graph::Graph g = io::generate_temporal_sbm(p);
  const std::string dir = temp_dir("check");
  write_dir(g, dir, Method::metis, 3);
  EXPECT_NO_THROW(check_partition_dir(dir, g));
  // A snapshot shard whose step-1 CSR is the step-0 one (self-consistent, so it reads fine, but wrong).
  graph::Shard shard = io::read_shard(dir, 1);
  shard.snapshots[1] = shard.snapshots[0];
  io::write_shard(io::shard_path(dir, 1), shard);
  try {
    check_partition_dir(dir, g);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("part-00001.h5: invariant violated: /snapshots/00001: "),
              std::string::npos)
        << e.what();
  }
}
