// Shards and halo plans: exact expected shards on a path graph, the directory invariants (check.h) for every
// method and several P on graphs with isolated vertices, self-loops, weights and directed edges, an
// independent naive reference for halos and sends, and the checker catching corrupted shards.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"
#include "io/part_file.h"
#include "partition/check.h"
#include "partition/halo_plan.h"
#include "partition/partition_dir.h"
#include "partition_dir_util.h"
#include "partition/test_graphs.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

using halogen::test::fake_source;

namespace {


PartitionResult write_dir(const graph::Graph& g, const std::string& dir, Method method, int32_t parts,
                          uint64_t seed = 1, Balance balance = Balance::all) {
  return halogen::test::write_partition_dir(g, dir, method, parts, seed, balance);
}

}  // namespace

// Path 0-1-2-3, contiguous into 2 parts: every field of both shards is known.
TEST(PartitionShardBuilder, PathGraphGivesExactShards) {
  graph::Graph g;
  g.num_nodes = 4;
  g.adjacency = csr_from_edges(4, {{0, 1}, {1, 2}, {2, 3}}, true);
  decorate(g, 2, 2);
  HaloPlan plan = build_halo_plan(g.adjacency, {0, 0, 1, 1}, 2);
  graph::Shard a = build_shard(g, plan, 0), b = build_shard(g, plan, 1);
  EXPECT_EQ(a.owned_gid, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(a.halo_gid, (std::vector<int64_t>{2}));
  EXPECT_EQ(a.plan.recv_offsets, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(a.plan.send_idx, (std::vector<int32_t>{1}));  // part 1's halo is {1} = part 0's local row 1
  EXPECT_EQ(a.plan.send_offsets, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(a.indptr, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(a.indices, (std::vector<int32_t>{1, 0, 2}));
  EXPECT_EQ(a.degree_owned, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.degree_halo, (std::vector<int64_t>{2}));
  EXPECT_EQ(a.features, (std::vector<float>{0.0f, 0.01f, 1.0f, 1.01f}));
  EXPECT_EQ(a.labels, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(a.train, (std::vector<int64_t>{0}));  // gid 0
  EXPECT_EQ(a.valid, (std::vector<int64_t>{1}));  // gid 1
  EXPECT_EQ(b.owned_gid, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.halo_gid, (std::vector<int64_t>{1}));
  EXPECT_EQ(b.plan.recv_offsets, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(b.plan.send_idx, (std::vector<int32_t>{0}));  // gid 2 = part 1's local row 0
  EXPECT_EQ(b.plan.send_offsets, (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(b.indptr, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(b.indices,
            (std::vector<int32_t>{1, 2, 0}));     // row gid2: {3 -> 1, 1 -> halo 2}; row gid3: {2 -> 0}
  EXPECT_EQ(b.train, (std::vector<int64_t>{1}));  // gid 3
  EXPECT_EQ(b.test, (std::vector<int64_t>{0}));   // gid 2
}

// Halo columns of several owners must come out sorted by local id, which is not gid order.
TEST(PartitionShardBuilder, RowsAreSortedByLocalIdAcrossOwners) {
  graph::Graph g;
  g.num_nodes = 5;
  // Part 0 owns {2}; part 1 owns {0, 4}; part 2 owns {1, 3}. Row 2 = {0,1,3,4}: halo order (owner, gid) is
  // 0,4 (part 1) then 1,3 (part 2).
  g.adjacency = csr_from_edges(5, {{2, 0}, {2, 1}, {2, 3}, {2, 4}}, true);
  decorate(g, 1, 2);
  HaloPlan plan = build_halo_plan(g.adjacency, {1, 2, 0, 2, 1}, 3);
  graph::Shard s = build_shard(g, plan, 0);
  EXPECT_EQ(s.halo_gid, (std::vector<int64_t>{0, 4, 1, 3}));
  EXPECT_EQ(s.plan.recv_offsets, (std::vector<int64_t>{0, 0, 2, 4}));
  EXPECT_EQ(s.indices, (std::vector<int32_t>{1, 2, 3, 4}));
}

// Two components split along the component boundary: no part has a halo, sends are empty too.
TEST(PartitionShardBuilder, PartWithNoHalo) {
  graph::Graph g;
  g.num_nodes = 6;
  g.adjacency = csr_from_edges(6, {{0, 1}, {1, 2}, {3, 4}, {4, 5}}, true);
  decorate(g, 2, 2);
  TempDir dir("nohalo");
  PartitionResult r = write_dir(g, dir.sub("out"), Method::contiguous, 2);
  EXPECT_EQ(r.stats.total_halo, 0);
  EXPECT_EQ(r.stats.cut_edges, 0);
  graph::Shard s = io::read_shard(dir.sub("out"), 1);
  EXPECT_EQ(s.num_halo(), 0);
  EXPECT_TRUE(s.plan.send_idx.empty());
  EXPECT_NO_THROW(check_partition_dir(dir.sub("out"), g));
}

// Naive reference: part p's halo = {v : some u owned by p stores (u, v), part(v) != p}; p sends to q exactly
// q's halo vertices owned by p. Compared with the plan, set by set.
void expect_plan_matches_naive(const graph::Graph& g, const HaloPlan& plan) {
  const int32_t parts = plan.num_parts;
  std::vector<std::set<int64_t>> halo(parts);
  for (int64_t u = 0; u < g.num_nodes; ++u)
    for (int64_t e = g.adjacency.indptr[u]; e < g.adjacency.indptr[u + 1]; ++e) {
      const int64_t v = g.adjacency.indices[e];
      if (plan.part_of[v] != plan.part_of[u]) halo[plan.part_of[u]].insert(v);
    }
  for (int32_t p = 0; p < parts; ++p) {
    EXPECT_EQ(std::set<int64_t>(plan.halo_gid[p].begin(), plan.halo_gid[p].end()), halo[p]) << "part " << p;
    for (int32_t q = 0; q < parts; ++q) {
      int64_t from_q = 0;
      for (int64_t v : halo[p]) from_q += plan.part_of[v] == q;
      EXPECT_EQ(plan.rows_sent(q, p), from_q) << q << " -> " << p;
    }
  }
}

struct Case {
  Method method;
  int32_t parts;
  bool directed, weighted;
};

class PartitionInvariants : public ::testing::TestWithParam<Case> {};

TEST_P(PartitionInvariants, HoldOnGraphWithIsolatedVertices) {
  const Case c = GetParam();
  graph::Graph g = community_graph(40, 4, /*isolated=*/7, /*seed=*/3, c.directed, c.weighted);
  TempDir dir("inv");
  PartitionResult r = write_dir(g, dir.sub("out"), c.method, c.parts);
  EXPECT_NO_THROW(check_partition_dir(dir.sub("out"), g));
  HaloPlan plan = build_halo_plan(
      g.adjacency, io::read_assignment(io::assignment_path(dir.sub("out")), c.parts, g.num_nodes), c.parts);
  expect_plan_matches_naive(g, plan);
  int64_t owned = 0;
  for (int64_t n : r.stats.owned) owned += n;
  EXPECT_EQ(owned, g.num_nodes);
  if (c.parts == 1) {
    EXPECT_EQ(r.stats.total_halo, 0);
    EXPECT_EQ(r.stats.cut_edges, 0);
  }
  // The metadata a training rank reads back.
  io::PartitionMeta meta = io::read_partition_meta(dir.sub("out"));
  EXPECT_EQ(meta.num_parts, c.parts);
  EXPECT_EQ(meta.num_nodes, g.num_nodes);
  EXPECT_EQ(meta.num_train, static_cast<int64_t>(g.train.size()));
  EXPECT_EQ(meta.method, method_name(c.method));
}

INSTANTIATE_TEST_SUITE_P(
    MethodsAndParts, PartitionInvariants,
    ::testing::Values(Case{Method::metis, 1, false, false}, Case{Method::metis, 2, false, true},
                      Case{Method::metis, 5, false, false}, Case{Method::metis, 8, true, false},
                      Case{Method::random, 1, false, false}, Case{Method::random, 3, true, true},
                      Case{Method::random, 8, false, false}, Case{Method::contiguous, 2, false, false},
                      Case{Method::contiguous, 7, true, false}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const Case& c = info.param;
      return std::string(method_name(c.method)) + "_P" + std::to_string(c.parts) +
             (c.directed ? "_directed" : "") + (c.weighted ? "_weighted" : "");
    });

// The checker must fail on shards that break an invariant (so a passing check means something).
TEST(PartitionCheck, DetectsCorruptedShards) {
  graph::Graph g = community_graph(30, 3, 2, 5);
  TempDir dir("corrupt");
  const std::string out = dir.sub("out");
  // gid order: "moved" below shifts a send row to the next local id, which then stays in ascending gid order
  // (what the reader checks), so only the checker sees it.
  halogen::test::write_partition_dir(g, out, Method::random, 3, 1, Balance::all, VertexOrder::gid);
  const io::PartitionMeta meta = io::read_partition_meta(out);
  const graph::Shard original = io::read_shard(out, 0);
  ASSERT_GE(original.plan.send_idx.size(), 2u);

  auto expect_violation = [&](graph::Shard bad, const std::string& expected) {
    io::write_shard(io::shard_path(out, 0), bad);
    try {
      check_partition_dir(out, g);
      ADD_FAILURE() << "no violation found; expected: " << expected;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  graph::Shard swapped = original;  // send rows out of order: the reader refuses them
  std::swap(swapped.plan.send_idx[0], swapped.plan.send_idx[1]);
  if (swapped.plan.send_idx[0] != swapped.plan.send_idx[1] &&
      original.plan.send_offsets[1] - original.plan.send_offsets[0] >= 2)
    expect_violation(swapped, "/send/idx: rows for part");
  graph::Shard moved = original;  // in order, but the wrong vertex: only the checker sees it
  const int64_t n_own = static_cast<int64_t>(original.owned_gid.size());
  bool shifted = false;
  for (size_t i = 0; i < moved.plan.send_idx.size() && !shifted; ++i) {
    const bool segment_end = std::find(moved.plan.send_offsets.begin(), moved.plan.send_offsets.end(),
                                       static_cast<int64_t>(i + 1)) != moved.plan.send_offsets.end();
    const int32_t next = segment_end ? static_cast<int32_t>(n_own) : moved.plan.send_idx[i + 1];
    if (moved.plan.send_idx[i] + 1 < next) {
      ++moved.plan.send_idx[i];
      shifted = true;
    }
  }
  ASSERT_TRUE(shifted);
  expect_violation(moved, "send row");
  graph::Shard feature = original;
  feature.features[0] += 1.0f;
  expect_violation(feature, "/node/feat");
  graph::Shard degree = original;
  degree.degree_owned[0] += 1;
  expect_violation(degree, "/degree/owned");
  graph::Shard split = original;
  split.train.pop_back();
  expect_violation(split, "/split/train");
  graph::Shard column = original;  // point an edge at another column
  for (int64_t e = 0; e + 1 < column.nnz(); ++e)
    if (column.indices[e] + 1 < column.indices[e + 1]) {
      ++column.indices[e];
      break;
    }
  expect_violation(column, "differs from global row");
  io::write_shard(io::shard_path(out, 0), original);
  EXPECT_NO_THROW(check_partition_dir(out, g));
}

TEST(PartitionPartFile, ShardRoundTripsAndReadRejectsWrongPart) {
  graph::Graph g = community_graph(20, 2, 1, 9, false, true);
  g.targets.resize(g.num_nodes);
  g.target_steps = 1;
  for (int64_t v = 0; v < g.num_nodes; ++v) g.targets[v] = 0.5f * v;
  TempDir dir("roundtrip");
  HaloPlan plan = build_halo_plan(g.adjacency, std::vector<int32_t>(g.num_nodes, 0), 1);
  write_dir(g, dir.sub("out"), Method::contiguous, 2);
  const graph::Shard s = io::read_shard(dir.sub("out"), 1);
  const io::PartitionMeta meta = io::read_partition_meta(dir.sub("out"));
  const std::vector<int32_t> assignment =
      io::read_assignment(io::assignment_path(dir.sub("out")), 2, g.num_nodes);
  HaloPlan plan2 = build_halo_plan(g.adjacency, assignment, 2);
  graph::Shard built = build_shard(g, plan2, 1);
  apply_vertex_order(built, VertexOrder::rcm);  // the default order, as written
  EXPECT_EQ(s.owned_gid, built.owned_gid);
  EXPECT_EQ(s.halo_gid, built.halo_gid);
  EXPECT_EQ(s.plan.send_idx, built.plan.send_idx);
  EXPECT_EQ(s.indptr, built.indptr);
  EXPECT_EQ(s.indices, built.indices);
  EXPECT_EQ(s.weight, built.weight);
  EXPECT_EQ(s.features, built.features);
  EXPECT_EQ(s.targets, built.targets);
  EXPECT_EQ(s.train, built.train);
  EXPECT_EQ(s.graph_name, "community");
  EXPECT_THROW(io::read_shard(dir.sub("out"), 2), UserError);
  EXPECT_THROW(io::read_shard_file(io::shard_path(dir.sub("out"), 0), 1, meta), UserError);
  EXPECT_NO_THROW(check_partition_dir(dir.sub("out"), g));
}

// A rank may own no training vertex: its shard has an empty /split/train that reads back empty.
TEST(PartitionShardBuilder, PartWithNoTrainingVertices) {
  graph::Graph g = community_graph(10, 4, 0, 4);  // 40 vertices
  g.train = {0, 1, 2};
  for (std::vector<int64_t>* split : {&g.valid, &g.test})  // the splits stay disjoint
    split->erase(std::remove_if(split->begin(), split->end(), [](int64_t v) { return v < 3; }), split->end());
  TempDir dir("notrain");
  // --balance vertices: the default (all) would move training vertices into part 1, and this edge case needs
  // a part without any.
  PartitionResult r = write_dir(g, dir.sub("out"), Method::contiguous, 2, 1, Balance::vertices);
  EXPECT_EQ(r.stats.train, (std::vector<int64_t>{3, 0}));
  const graph::Shard s = io::read_shard(dir.sub("out"), 1);
  EXPECT_TRUE(s.train.empty());
  EXPECT_FALSE(s.test.empty());
  EXPECT_NO_THROW(check_partition_dir(dir.sub("out"), g));
}
