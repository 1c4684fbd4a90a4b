// build_csr: symmetrise, dedupe, drop self-loops; exact outputs on tiny inputs and a naive reference.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "core/rng.h"
#include "graph/build.h"

using halogen::graph::build_csr;
using halogen::graph::BuildOptions;
using halogen::graph::Csr;
using halogen::graph::EdgeList;

TEST(CsrBuild, SymmetrisesDedupesAndDropsSelfLoops) {
  EdgeList edges;
  edges.src = {0, 1, 1, 2, 2, 3, 0};
  edges.dst = {1, 0, 1, 0, 0, 3, 1};  // duplicates (0,1)x3 incl. reverse, self-loops (1,1),(3,3)
  const Csr csr = build_csr(5, edges);
  EXPECT_EQ(csr.indptr, (std::vector<int64_t>{0, 2, 3, 4, 4, 4}));
  EXPECT_EQ(csr.indices, (std::vector<int64_t>{1, 2, 0, 0}));
  EXPECT_EQ(csr.num_rows, 5);
  EXPECT_TRUE(halogen::graph::is_symmetric(csr));
}

TEST(CsrBuild, DirectedKeepsDirectionAndOptionallySelfLoops) {
  EdgeList edges;
  edges.src = {2, 0, 0, 1};
  edges.dst = {0, 2, 2, 1};
  BuildOptions options;
  options.symmetrize = false;
  options.drop_self_loops = false;
  const Csr csr = build_csr(3, edges, options);
  EXPECT_EQ(csr.indptr, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(csr.indices, (std::vector<int64_t>{2, 1, 0}));
}

TEST(CsrBuild, DuplicateKeepsLargestWeightSoSymmetricWeightsAgree) {
  EdgeList edges;
  edges.src = {0, 1, 0};
  edges.dst = {1, 0, 2};
  edges.weight = {1.0f, 3.0f, 2.0f};
  const Csr csr = build_csr(3, edges);
  EXPECT_EQ(csr.indices, (std::vector<int64_t>{1, 2, 0, 0}));
  EXPECT_EQ(csr.weight, (std::vector<float>{3.0f, 2.0f, 3.0f, 2.0f}));
}

TEST(CsrBuild, EmptyGraphAndIsolatedVertices) {
  const Csr empty = build_csr(0, EdgeList{});
  EXPECT_EQ(empty.indptr, (std::vector<int64_t>{0}));
  const Csr isolated = build_csr(3, EdgeList{});
  EXPECT_EQ(isolated.indptr, (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(CsrBuild, MatchesNaiveSetReferenceOnRandomEdges) {
  const int64_t n = 200;
  EdgeList edges;
  std::set<std::pair<int64_t, int64_t>> reference;
  for (uint64_t i = 0; i < 3000; ++i) {
    const int64_t s = static_cast<int64_t>(halogen::rng::uniform_u64(7, 1, i) % n);
    const int64_t d = static_cast<int64_t>(halogen::rng::uniform_u64(7, 2, i) % n);
    edges.src.push_back(s);
    edges.dst.push_back(d);
    if (s != d) {
      reference.insert({s, d});
      reference.insert({d, s});
    }
  }
  const Csr csr = build_csr(n, std::move(edges));
  std::vector<std::pair<int64_t, int64_t>> got;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) got.push_back({r, csr.indices[e]});
  const std::vector<std::pair<int64_t, int64_t>> expected(reference.begin(), reference.end());
  EXPECT_EQ(got, expected);
}

TEST(CsrBuild, IsSymmetricFindsTheFirstMissingReverse) {
  Csr csr;
  csr.num_rows = csr.num_cols = 3;
  csr.indptr = {0, 1, 3, 4};
  csr.indices = {1, 0, 2, 1};  // (0,1) (1,0) (1,2) (2,1): symmetric
  EXPECT_TRUE(halogen::graph::is_symmetric(csr));
  csr.indices = {1, 0, 2, 0};  // (2,0) has no (0,2)
  int64_t row = -1, entry = -1;
  EXPECT_FALSE(halogen::graph::is_symmetric(csr, &row, &entry));
  EXPECT_EQ(row, 1);  // (1,2) lacks (2,1) and comes first
  EXPECT_EQ(entry, 2);
}

TEST(CsrBuild, IsSymmetricRejectsADirectedCycleWithBalancedDegrees) {
  // 0->1->2->0: every row and column holds one entry, so only the pairs themselves reveal the asymmetry.
  Csr csr;
  csr.num_rows = csr.num_cols = 3;
  csr.indptr = {0, 1, 2, 3};
  csr.indices = {1, 2, 0};
  int64_t row = -1, entry = -1;
  EXPECT_FALSE(halogen::graph::is_symmetric(csr, &row, &entry));
  EXPECT_EQ(row, 0);
  EXPECT_EQ(entry, 0);
  const Csr both = build_csr(3, EdgeList{{0, 1, 2}, {1, 2, 0}, {}});
  EXPECT_TRUE(halogen::graph::is_symmetric(both));
}
