// refine_loads (partition/rebalance.h), the balance-keeping refinement after the rebalance, checked against a
// brute-force reading of its contract on small graphs: the cut falls by at least the gain it reports; no part
// rises above max(bound, its own load before) in any constraint; when it stops on a quiet cycle no single move
// that removes cut and fits is left; the same input gives the same moves; nothing moves at P = 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "io/generate.h"
#include "partition/rebalance.h"
#include "partition/test_graphs.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

namespace {

// Stored cut entries (each cut edge counts from both sides), counted naively.
int64_t cut_entries(const graph::Csr& adj, const std::vector<int32_t>& part_of) {
  int64_t cut = 0;
  for (int64_t v = 0; v + 1 < static_cast<int64_t>(adj.indptr.size()); ++v)
    for (int64_t e = adj.indptr[v]; e < adj.indptr[v + 1]; ++e) cut += part_of[adj.indices[e]] != part_of[v];
  return cut;
}

// Relative load of part p in constraint c.
double relative(const BalanceWeights& w, const std::vector<double>& fractions, const std::vector<int32_t>& part_of,
                int32_t p, int32_t c) {
  int64_t load = 0, total = 0;
  for (size_t v = 0; v < part_of.size(); ++v) {
    total += w.weight[v * w.ncon + c];
    if (part_of[v] == p) load += w.weight[v * w.ncon + c];
  }
  return total == 0 ? 0 : static_cast<double>(load) / (fractions[p] * static_cast<double>(total));
}

// A single move of one vertex that removes cut and keeps its destination within `bound` in every constraint
// the vertex weighs in; -1 when none.
int64_t improving_move_left(const graph::Csr& adj, const BalanceWeights& w, const std::vector<double>& fractions,
                            double bound, const std::vector<int32_t>& part_of) {
  const int32_t parts = static_cast<int32_t>(fractions.size());
  for (int64_t v = 0; v < static_cast<int64_t>(part_of.size()); ++v)
    for (int32_t q = 0; q < parts; ++q) {
      if (q == part_of[v]) continue;
      int64_t gain = 0;
      for (int64_t e = adj.indptr[v]; e < adj.indptr[v + 1]; ++e) {
        const int64_t x = adj.indices[e];
        if (x == v) continue;
        gain += (part_of[x] == q) - (part_of[x] == part_of[v]);
      }
      if (gain <= 0) continue;
      std::vector<int32_t> moved = part_of;
      moved[v] = q;
      bool fits = true;
      for (int32_t c = 0; c < w.ncon; ++c)
        if (w.weight[v * w.ncon + c] > 0 && relative(w, fractions, moved, q, c) > bound) fits = false;
      if (fits) return v;
    }
  return -1;
}

graph::Graph small_rmat(int scale, uint64_t seed) {
  io::RmatParams params;
  params.scale = scale;
  params.edge_factor = 4;
  params.classes = 3;  // a 60/20/20 split: the training constraint too
  params.seed = seed;
  return io::generate_rmat(params);
}

}  // namespace

// Random and rebalanced assignments of small RMAT and community graphs at P = 2, 3, 4, 8: every property of
// the contract, checked by brute force.
TEST(Refine, KeepsBalanceAndLowersTheCutByItsGain) {
  std::vector<graph::Graph> graphs;
  for (uint64_t seed : {1, 2}) graphs.push_back(small_rmat(7, seed));
  graphs.push_back(community_graph(/*per_block=*/30, /*communities=*/6, /*isolated=*/5, /*seed=*/3));
  decorate(graphs.back(), /*features=*/0, /*classes=*/3);  // a training split
  int checked = 0, settled = 0, cases = 0;
  for (const graph::Graph& g : graphs)
    for (int32_t parts : {2, 3, 4, 8})
      for (bool rebalanced : {false, true}) {
        const BalanceWeights w = balance_weights(g, Balance::all);
        const std::vector<double> fractions(parts, 1.0 / parts);
        std::mt19937 rng(static_cast<uint32_t>(parts * 7 + rebalanced));
        std::vector<int32_t> part_of(static_cast<size_t>(g.num_nodes));
        for (int32_t& p : part_of) p = static_cast<int32_t>(rng() % parts);
        // 1.1: loose enough that a random assignment of ~100 vertices has parts on both sides of it.
        const double bound = 1.1;
        if (rebalanced) rebalance_loads(g.adjacency, w, fractions, bound, part_of);
        const std::vector<int32_t> before = part_of;
        const int64_t cut_before = cut_entries(g.adjacency, part_of);
        const RefineReport r = refine_loads(g.adjacency, w, fractions, bound, part_of);
        const int64_t cut_after = cut_entries(g.adjacency, part_of);
        SCOPED_TRACE(testing::Message() << "N=" << g.num_nodes << " P=" << parts << " rebalanced=" << rebalanced);
        // gain counts each removed cut edge once, from the moving vertex's row; the stored entries count it twice.
        EXPECT_LE(cut_after, cut_before - 2 * r.gained);
        EXPECT_GE(r.gained, r.moved);  // every move predicted at least one edge
        EXPECT_EQ(r.moved == 0, part_of == before);
        for (int32_t p = 0; p < parts; ++p)
          for (int32_t c = 0; c < w.ncon; ++c)
            EXPECT_LE(relative(w, fractions, part_of, p, c),
                      std::max(bound, relative(w, fractions, before, p, c)) + 1e-12)
                << "part " << p << " constraint " << w.names[c];
        // Stopped on a quiet cycle (not the round limit, which a random assignment at P = 8 can reach): no single
        // move that removes cut and fits is left.
        if (r.rounds < kMaxRefineRounds) {
          EXPECT_EQ(improving_move_left(g.adjacency, w, fractions, bound, part_of), -1);
          ++settled;
        }
        std::vector<int32_t> again = before;
        EXPECT_EQ(refine_loads(g.adjacency, w, fractions, bound, again).moved, r.moved);
        EXPECT_EQ(again, part_of);
        checked += r.moved > 0;
        ++cases;
      }
  EXPECT_GT(checked, cases / 2) << "most cases must move something, or the checks above test little";
  EXPECT_GT(settled, cases / 2) << "most cases must settle, or the local-optimum check tests little";
}

// Edge cases: one part (nothing to do), a graph without edges (no gain anywhere), isolated vertices.
TEST(Refine, NothingToGainMovesNothing) {
  graph::Graph g;
  g.num_nodes = 6;
  g.adjacency = csr_from_edges(6, {}, true);
  const BalanceWeights w = balance_weights(g, Balance::all);
  std::vector<int32_t> part_of{0, 0, 0, 1, 1, 1};
  EXPECT_EQ(refine_loads(g.adjacency, w, {0.5, 0.5}, 1.03, part_of).moved, 0);
  std::vector<int32_t> one(6, 0);
  EXPECT_EQ(refine_loads(g.adjacency, w, {1.0}, 1.03, one).moved, 0);
}

// A path 0-1-2-3-4-5 split {0,1,2,4} | {3,5}: vertex 3 (neighbours 2 and 4, both in part 0) gains 2 by moving
// to part 0, but that takes part 0 to 5 of 6 vertices, above the bound; vertex 4 (neighbours 3 and 5, both in
// part 1) gains 2 by moving to part 1, which fits (3 of 6). The refinement makes that move.
TEST(Refine, TakesTheMoveThatFits) {
  graph::Graph g;
  g.num_nodes = 6;
  g.adjacency = csr_from_edges(6, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}, true);
  BalanceWeights w;
  w.ncon = 1;
  w.names = {"vertices"};
  w.weight.assign(6, 1);
  std::vector<int32_t> part_of{0, 0, 0, 1, 0, 1};
  const RefineReport r = refine_loads(g.adjacency, w, {0.5, 0.5}, 1.2, part_of);
  EXPECT_EQ(part_of, (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(r.moved, 1);
  EXPECT_EQ(r.gained, 2);
}
