// Vertex assignment: METIS determinism per seed and quality on graphs with an obvious best cut, baseline
// balance and part weights, multi-constraint training balance, and every rejected input.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "partition/assign.h"
#include "partition/halo_plan.h"
#include "partition/partition_dir.h"
#include "partition/statistics.h"
#include "partition/test_graphs.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

namespace {

AssignOptions options_for(Method method, int32_t parts, uint64_t seed = 1) {
  AssignOptions o;
  o.method = method;
  o.num_parts = parts;
  o.seed = seed;
  return o;
}

std::vector<int64_t> part_sizes(const std::vector<int32_t>& part_of, int32_t parts) {
  std::vector<int64_t> sizes(parts, 0);
  for (int32_t p : part_of) ++sizes[p];
  return sizes;
}

// `cliques` cliques of `size` vertices, clique c = {c*size .. (c+1)*size), joined in a ring by one edge each.
graph::Graph ring_of_cliques(int32_t cliques, int64_t size) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int32_t c = 0; c < cliques; ++c) {
    for (int64_t i = 0; i < size; ++i)
      for (int64_t j = i + 1; j < size; ++j) edges.emplace_back(c * size + i, c * size + j);
    edges.emplace_back(c * size, ((c + 1) % cliques) * size + 1);
  }
  graph::Graph g;
  g.num_nodes = cliques * size;
  g.adjacency = csr_from_edges(g.num_nodes, edges, true);
  decorate(g, 1, 2);
  return g;
}

}  // namespace

TEST(PartitionMetis, DeterministicPerSeed) {
  graph::Graph g = community_graph(100, 6, 5, 11);
  for (Objective objective : {Objective::cut, Objective::volume}) {
    AssignOptions o = options_for(Method::metis, 6, 42);
    o.objective = objective;
    EXPECT_EQ(assign_parts(g, o), assign_parts(g, o));
  }
  AssignOptions random = options_for(Method::random, 6, 42);
  EXPECT_EQ(assign_parts(g, random), assign_parts(g, random));
  AssignOptions other_seed = options_for(Method::random, 6, 43);
  EXPECT_NE(assign_parts(g, random), assign_parts(g, other_seed));
}

// Four 12-cliques in a ring: the best 4-way cut is the 4 ring edges, each part one clique.
TEST(PartitionMetis, FindsTheObviousCut) {
  graph::Graph g = ring_of_cliques(4, 12);
  std::vector<int32_t> part_of = assign_parts(g, options_for(Method::metis, 4));
  const PartitionStats stats = compute_statistics(g, build_halo_plan(g.adjacency, part_of, 4));
  EXPECT_EQ(stats.cut_edges, 4);
  EXPECT_EQ(stats.total_halo, 8);  // each clique reads one vertex of each ring neighbour
  for (int32_t c = 0; c < 4; ++c)
    for (int64_t i = 1; i < 12; ++i) EXPECT_EQ(part_of[c * 12 + i], part_of[c * 12]);
  // Random assignment of the same graph cuts far more (a sanity bound, not a timing).
  const PartitionStats random =
      compute_statistics(g, build_halo_plan(g.adjacency, assign_parts(g, options_for(Method::random, 4)), 4));
  EXPECT_GT(random.cut_edges, 10 * stats.cut_edges);
}

TEST(PartitionMetis, DirectedGraphIsSymmetrisedForMetis) {
  // Directed ring of cliques: only one direction of each edge is stored; METIS still sees the cliques.
  graph::Graph g = ring_of_cliques(3, 10);
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t u = 0; u < g.num_nodes; ++u)
    for (int64_t e = g.adjacency.indptr[u]; e < g.adjacency.indptr[u + 1]; ++e)
      if (u < g.adjacency.indices[e]) edges.emplace_back(u, g.adjacency.indices[e]);
  g.adjacency = csr_from_edges(g.num_nodes, edges, false);
  g.directed = true;
  std::vector<int32_t> part_of = assign_parts(g, options_for(Method::metis, 3));
  for (int32_t c = 0; c < 3; ++c)
    for (int64_t i = 1; i < 10; ++i) EXPECT_EQ(part_of[c * 10 + i], part_of[c * 10]);
}

TEST(PartitionBaselines, ContiguousAndRandomBalanceVerticesExactly) {
  graph::Graph g = community_graph(25, 4, 3, 2);  // 103 vertices
  for (Method method : {Method::contiguous, Method::random}) {
    for (int32_t parts : {1, 2, 7, 103}) {
      // --balance vertices: the count split itself (the default, all, may then move vertices for edges).
      AssignOptions o = options_for(method, parts);
      o.balance = Balance::vertices;
      const std::vector<int64_t> sizes = part_sizes(assign_parts(g, o), parts);
      const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
      EXPECT_LE(*hi - *lo, 1) << method_name(method) << " P=" << parts;
    }
  }
  AssignOptions in_order = options_for(Method::contiguous, 4);
  in_order.balance = Balance::vertices;  // runs of ids only without rebalancing
  const std::vector<int32_t> contiguous = assign_parts(g, in_order);
  EXPECT_TRUE(std::is_sorted(contiguous.begin(), contiguous.end()));
}

TEST(PartitionBaselines, PartWeightsSetTargetFractions) {
  graph::Graph g = community_graph(100, 4, 0, 2);  // 400 vertices
  for (Method method : {Method::contiguous, Method::random, Method::metis}) {
    AssignOptions o = options_for(method, 4);
    o.balance = Balance::vertices;  // sizes in vertices exactly; partition_rebalance_test covers the default
    o.part_weights = {1, 1, 2, 4};  // targets 50, 50, 100, 200
    const std::vector<int64_t> sizes = part_sizes(assign_parts(g, o), 4);
    // METIS may deviate by its imbalance tolerance (3%) of the largest target plus rounding.
    const double slack = method == Method::metis ? 0.05 : 0.0;
    EXPECT_NEAR(sizes[0], 50, 1 + slack * 200) << method_name(method);
    EXPECT_NEAR(sizes[3], 200, 1 + slack * 200) << method_name(method);
  }
}

TEST(PartitionMetis, TrainBalanceUsesTwoConstraints) {
  // Training vertices all in the first half of the ids: balancing vertices alone could leave some parts
  // with almost none; --balance train must spread them.
  graph::Graph g = community_graph(100, 4, 0, 7);
  g.train.clear();
  for (int64_t v = 0; v < g.num_nodes / 4; ++v) g.train.push_back(v);
  AssignOptions o = options_for(Method::metis, 4);
  o.balance = Balance::train;
  std::vector<int32_t> part_of = assign_parts(g, o);
  const PartitionStats stats = compute_statistics(g, build_halo_plan(g.adjacency, part_of, 4));
  EXPECT_LT(stats.train_balance, 1.10);  // METIS's 3% tolerance plus small-count rounding
  EXPECT_LT(stats.edge_balance, 1.10);
  AssignOptions contiguous = options_for(Method::contiguous, 4);
  contiguous.balance = Balance::train;
  const PartitionStats c =
      compute_statistics(g, build_halo_plan(g.adjacency, assign_parts(g, contiguous), 4));
  EXPECT_LT(c.train_balance, 1.05);
}

TEST(PartitionErrors, RejectsBadPartCounts) {
  graph::Graph g = community_graph(5, 2, 0, 1);  // 10 vertices
  for (Method method : {Method::metis, Method::random, Method::contiguous}) {
    EXPECT_THROW(assign_parts(g, options_for(method, 0)), UserError);
    EXPECT_THROW(assign_parts(g, options_for(method, -3)), UserError);
    EXPECT_THROW(assign_parts(g, options_for(method, 11)), UserError);
    EXPECT_NO_THROW(assign_parts(g, options_for(method, 10)));
  }
  try {
    assign_parts(g, options_for(Method::metis, 11));
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("only 10 vertices"), std::string::npos) << e.what();
  }
}

TEST(PartitionErrors, RejectsBadSpellingsAndWeights) {
  EXPECT_THROW(parse_method("kahip"), UserError);
  EXPECT_THROW(parse_objective("edges"), UserError);
  EXPECT_THROW(parse_balance("nodes"), UserError);
  EXPECT_EQ(parse_part_weights("1,1,2,2", 4), (std::vector<double>{1, 1, 2, 2}));
  EXPECT_THROW(parse_part_weights("1,1,2", 4), UserError);
  EXPECT_THROW(parse_part_weights("1,0,2", 3), UserError);
  EXPECT_THROW(parse_part_weights("1,x,2", 3), UserError);
  graph::Graph g = community_graph(5, 2, 0, 1);
  AssignOptions o = options_for(Method::metis, 2);
  o.imbalance = 0.9;
  EXPECT_THROW(assign_parts(g, o), UserError);
}

TEST(PartitionErrors, MetisLimitNamesTheAlternatives) {
  EXPECT_NO_THROW(check_metis_limits(1000, 2000));
  try {
    check_metis_limits(int64_t{3} << 30, 10);
    ADD_FAILURE() << "no error for 3 Gi vertices";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("2147483647"), std::string::npos) << message;
    EXPECT_NE(message.find("--method ptscotch"), std::string::npos) << message;
  }
  EXPECT_THROW(check_metis_limits(1000, int64_t{5} << 30), UserError);
}

TEST(PartitionErrors, NonEmptyOutputDirectoryNeedsForce) {
  TempDir dir("outdir");
  EXPECT_NO_THROW(check_output_dir(dir.sub("absent"), false));
  EXPECT_NO_THROW(check_output_dir(dir.path(), false));  // empty
  { std::ofstream(dir.sub("meta.json")) << "{}"; }
  { std::ofstream(dir.sub("part-00007.h5")) << "stale"; }
  { std::ofstream(dir.sub(".part-00001.h5.tmp.12.ab")) << "a killed writer's temporary"; }
  { std::ofstream(dir.sub("assignment.h5.tmp")) << "an older version's temporary"; }
  EXPECT_THROW(check_output_dir(dir.path(), false), UserError);
  EXPECT_NO_THROW(check_output_dir(dir.path(), true));  // only a partition's files: --force may replace them
  // --force replaces the directory as a whole: a file that is not the partition's is refused, not deleted.
  { std::ofstream(dir.sub("notes.txt")) << "keep me"; }
  try {
    check_output_dir(dir.path(), true);
    ADD_FAILURE() << "--force accepted a directory holding notes.txt";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("holds notes.txt"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::exists(dir.sub("notes.txt")));
  { std::ofstream(dir.sub("file")) << "x"; }
  EXPECT_THROW(check_output_dir(dir.sub("file"), true), UserError);  // not a directory
}

// A graph without edges (every vertex isolated) still partitions with every method, balanced by count.
TEST(PartitionMetis, EdgelessGraph) {
  graph::Graph g;
  g.num_nodes = 30;
  g.adjacency = csr_from_edges(30, {}, true);
  decorate(g, 1, 2);
  for (Method method : {Method::metis, Method::random, Method::contiguous}) {
    const std::vector<int32_t> part_of = assign_parts(g, options_for(method, 3));
    const PartitionStats stats = compute_statistics(g, build_halo_plan(g.adjacency, part_of, 3));
    EXPECT_EQ(stats.total_halo, 0);
    EXPECT_LE(stats.vertex_balance, 1.1) << method_name(method);  // 30/3 = 10 each, METIS may be off by 1
  }
}
