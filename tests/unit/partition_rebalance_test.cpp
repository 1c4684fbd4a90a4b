// The default balance (Balance::all) on power-law graphs: owned vertices and stored edges of every part
// within 1.15x of the mean on RMAT graphs for every method and for METIS on a sparsified graph; rebalance()'s
// contract (never worse, unchanged when already balanced, part weights honoured, deterministic); the
// constraints balance_weights builds.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "io/generate.h"
#include "partition/assign.h"
#include "partition/halo_plan.h"
#include "partition/metis_memory.h"
#include "partition/rebalance.h"
#include "partition/statistics.h"
#include "partition/test_graphs.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

namespace {

// The guarantee the default gives (issue 18): every part within 1.15x of the mean in owned vertices and in
// stored edges. METIS aims at --imbalance 1.03; 1.15 leaves room for hubs that METIS cannot place exactly.
constexpr double kGuarantee = 1.15;

graph::Graph rmat(int scale, int32_t classes = 0) {
  io::RmatParams params;
  params.scale = scale;
  params.classes = classes;  // > 0: a 60/20/20 split, so `all` gets a training constraint
  return io::generate_rmat(params);
}

PartitionStats stats_of(const graph::Graph& g, const std::vector<int32_t>& part_of, int32_t parts) {
  return compute_statistics(g, build_halo_plan(g.adjacency, part_of, parts));
}

AssignOptions options_for(Method method, int32_t parts, Balance balance = Balance::all) {
  AssignOptions o;
  o.method = method;
  o.num_parts = parts;
  o.balance = balance;
  return o;
}

}  // namespace

TEST(BalanceDefault, IsAllAndParses) {
  EXPECT_EQ(AssignOptions{}.balance, Balance::all);
  EXPECT_EQ(parse_balance("all"), Balance::all);
  EXPECT_STREQ(balance_name(Balance::all), "all");
  for (const char* old_mode : {"vertices", "edges", "train"})
    EXPECT_STREQ(balance_name(parse_balance(old_mode)), old_mode);  // the former modes keep their names
}

// RMAT scale 13 (8192 vertices, ~200k stored entries, hubs of degree in the thousands): with
// --balance vertices METIS leaves one part with about 2.4x the mean stored edges at P=4 (checked below, so
// the graph is a real test); the default keeps both within 1.15x for every method.
TEST(BalanceDefault, RmatPartsWithinGuaranteeForEveryMethod) {
  const graph::Graph g = rmat(13);
  const PartitionStats old_default =
      stats_of(g, assign_parts(g, options_for(Method::metis, 4, Balance::vertices)), 4);
  EXPECT_GT(old_default.edge_balance, 1.5) << "the graph no longer shows the problem the default solves";
  for (Method method : {Method::metis, Method::random, Method::contiguous}) {
    for (int32_t parts : {2, 4}) {
      const PartitionStats s = stats_of(g, assign_parts(g, options_for(method, parts)), parts);
      EXPECT_LE(s.vertex_balance, kGuarantee) << method_name(method) << " P=" << parts;
      EXPECT_LE(s.edge_balance, kGuarantee) << method_name(method) << " P=" << parts;
      EXPECT_EQ(s.empty_parts, 0);
    }
  }
}

// With a training split the training vertices are a third constraint.
TEST(BalanceDefault, RmatWithSplitBalancesTrainingVerticesToo) {
  const graph::Graph g = rmat(12, 4);
  ASSERT_FALSE(g.train.empty());
  const BalanceWeights w = balance_weights(g, Balance::all);
  EXPECT_EQ(w.names, (std::vector<std::string>{"vertices", "edges", "train"}));
  for (int32_t parts : {2, 4}) {
    const PartitionStats s = stats_of(g, assign_parts(g, options_for(Method::metis, parts)), parts);
    EXPECT_LE(s.vertex_balance, kGuarantee) << "P=" << parts;
    EXPECT_LE(s.edge_balance, kGuarantee) << "P=" << parts;
    EXPECT_LE(s.train_balance, kGuarantee) << "P=" << parts;
  }
}

// METIS on a sparsified graph (the path large graphs take) is rebalanced on the full graph as well.
TEST(BalanceDefault, SparsifiedMetisWithinGuarantee) {
  const graph::Graph g = rmat(13);
  const int32_t parts = 4;
  // Budget: the modelled rest of the process (48 MiB + the graph's arrays, about 2 MiB here) plus METIS's
  // estimate for a third of the entries, so METIS runs on a sparsified graph.
  const int64_t budget = (int64_t{50} << 20) + estimate_metis_bytes(g.num_nodes, g.num_edges() / 3, parts);
  graph::Graph held = g;
  MetisMemoryReport report;
  const std::vector<int32_t> part_of = assign_metis_within(
      held, options_for(Method::metis, parts), budget, [&] { return g.adjacency; }, &report);
  ASSERT_TRUE(report.sparsified);
  const PartitionStats s = stats_of(g, part_of, parts);
  EXPECT_LE(s.vertex_balance, kGuarantee);
  EXPECT_LE(s.edge_balance, kGuarantee);
}

// rebalance_loads on the old default's result: it must bring the stored edges down to the bound asked for,
// keep vertices there too, and report what it did.
TEST(Rebalance, FixesTheVertexOnlyPartition) {
  const graph::Graph g = rmat(13);
  for (int32_t parts : {2, 4}) {
    std::vector<int32_t> part_of = assign_parts(g, options_for(Method::metis, parts, Balance::vertices));
    const BalanceWeights w = balance_weights(g, Balance::all);
    const std::vector<double> fractions(parts, 1.0 / parts);
    const double before = max_relative_load(w, fractions, part_of);
    const RebalanceReport r = rebalance_loads(g.adjacency, w, fractions, 1.03, part_of);
    EXPECT_DOUBLE_EQ(r.max_load_before, before);
    EXPECT_GT(r.moved, 0);
    EXPECT_DOUBLE_EQ(r.max_load_after, max_relative_load(w, fractions, part_of));
    // The bound asked for (1.03) is reached up to one vertex's weight: the heaviest hub here holds under 2%
    // of a part's edges at P=4.
    EXPECT_LE(r.max_load_after, 1.05) << "P=" << parts << " from " << before;
    const PartitionStats s = stats_of(g, part_of, parts);
    EXPECT_LE(s.edge_balance, 1.05);
    EXPECT_LE(s.vertex_balance, 1.05);
  }
}

TEST(Rebalance, BalancedAssignmentIsLeftAlone) {
  const graph::Graph g = rmat(12);
  std::vector<int32_t> part_of = assign_parts(g, options_for(Method::metis, 4));
  const std::vector<int32_t> before = part_of;
  const BalanceWeights w = balance_weights(g, Balance::all);
  // A bound above the current maximum: nothing is over it, so nothing may move.
  const double bound = max_relative_load(w, std::vector<double>(4, 0.25), part_of) + 0.01;
  const RebalanceReport r = rebalance_loads(g.adjacency, w, std::vector<double>(4, 0.25), bound, part_of);
  EXPECT_EQ(r.moved, 0);
  EXPECT_EQ(part_of, before);
}

// A star: the hub alone holds half the stored edges, so at P = 2 no assignment balances both vertices and
// edges within 1.15. rebalance must end no worse than it started, deterministically, without emptying a part.
TEST(Rebalance, UnsplittableHubNeverWorse) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t leaf = 1; leaf < 200; ++leaf) edges.emplace_back(0, leaf);
  graph::Graph g;
  g.num_nodes = 200;
  g.adjacency = csr_from_edges(200, edges, true);
  const BalanceWeights w = balance_weights(g, Balance::all);
  std::vector<int32_t> part_of(200, 1);
  part_of[0] = 0;  // the hub alone: vertices 1 vs 199
  std::vector<int32_t> again = part_of;
  const RebalanceReport r = rebalance_loads(g.adjacency, w, {0.5, 0.5}, 1.03, part_of);
  EXPECT_LE(r.max_load_after, r.max_load_before);
  EXPECT_LT(r.max_load_after, r.max_load_before) << "moving leaves to the hub's part helps vertices";
  EXPECT_EQ(rebalance_loads(g.adjacency, w, {0.5, 0.5}, 1.03, again).moved, r.moved);
  EXPECT_EQ(again, part_of);
  EXPECT_GT(std::count(part_of.begin(), part_of.end(), 0), 0);
  EXPECT_GT(std::count(part_of.begin(), part_of.end(), 1), 0);
}

// Part weights 1:3: the targets are a quarter and three quarters of every constraint.
TEST(Rebalance, HonoursPartWeights) {
  const graph::Graph g = rmat(12);
  AssignOptions o = options_for(Method::random, 2);
  o.part_weights = {1, 3};
  const std::vector<int32_t> part_of = assign_parts(g, o);
  const PartitionStats s = stats_of(g, part_of, 2);
  const double vertices = static_cast<double>(g.num_nodes), edges = static_cast<double>(g.num_edges());
  // Within the 1.15 guarantee of each part's own target.
  EXPECT_LE(s.owned[0], kGuarantee * 0.25 * vertices);
  EXPECT_LE(s.owned[1], kGuarantee * 0.75 * vertices);
  EXPECT_LE(s.nnz[0], kGuarantee * 0.25 * edges);
  EXPECT_LE(s.nnz[1], kGuarantee * 0.75 * edges);
}

TEST(BalanceWeights, ConstraintsOfEveryMode) {
  graph::Graph g;
  g.num_nodes = 4;
  g.adjacency = csr_from_edges(4, {{0, 1}, {0, 2}}, true);  // degrees 2, 1, 1, 0
  g.train = {1, 3};
  const BalanceWeights all = balance_weights(g, Balance::all);
  EXPECT_EQ(all.ncon, 3);
  EXPECT_EQ(all.weight, (std::vector<int64_t>{1, 2, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}));
  EXPECT_EQ(balance_weights(g, Balance::edges).weight, (std::vector<int64_t>{3, 2, 2, 1}));
  EXPECT_EQ(balance_weights(g, Balance::vertices).weight, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(balance_weights(g, Balance::train).ncon, 2);
  g.train.clear();
  EXPECT_EQ(balance_weights(g, Balance::all).names, (std::vector<std::string>{"vertices", "edges"}));
  g.adjacency = csr_from_edges(4, {}, true);  // no edges: the edge constraint would constrain nothing
  EXPECT_EQ(balance_weights(g, Balance::all).names, (std::vector<std::string>{"vertices"}));
}
