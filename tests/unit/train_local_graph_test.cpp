// LocalGraph: GCN / mean normalisation with global degrees, the A_own / A_halo column split and transposes,
// on hand-checked shards.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/local_graph.h"
#include "train/synthetic_graph.h"

namespace halogen {
namespace {

// Dense (rows x cols) copy of a LocalCsr.
std::vector<std::vector<float>> dense(const graph::LocalCsr& a) {
  std::vector<std::vector<float>> d(a.rows, std::vector<float>(a.cols, 0.0f));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      if (k > a.indptr[r]) {
        EXPECT_LT(a.indices[k - 1], a.indices[k]) << "row " << r << " not sorted";
      }
      d[r][a.indices[k]] = a.values[k];
    }
  }
  return d;
}

// Path 0-1-2-3 plus isolated 4, split {0, 1, 4} | {2, 3}: part 0 owns 0, 1, 4 and has halo {2}.
graph::Graph path_graph() {
  graph::Graph g;
  g.num_nodes = 5;
  g.num_classes = 2;
  g.num_features = 1;
  g.adjacency.num_rows = g.adjacency.num_cols = 5;
  g.adjacency.indptr = {0, 1, 3, 5, 6, 6};
  g.adjacency.indices = {1, 0, 2, 1, 3, 2};
  g.features.assign(5, 1.0f);
  g.labels = {0, 1, 0, 1, 0};
  return g;
}

TEST(LocalGraph, GcnNormalisationUsesGlobalDegreesAndSplitsColumns) {
  const graph::Graph g = path_graph();
  const graph::Shard s = testing::make_shard(g, {0, 0, 1, 1, 0}, 2, 0);
  ASSERT_EQ(s.num_owned(), 3);
  ASSERT_EQ(s.num_halo(), 1);
  const graph::LocalGraph lg = graph::build_local_graph(s, graph::Normalization::gcn);
  // Degrees 1, 2, 2, 1, 0 (+1 for the self-loop): Â[i][j] = 1 / sqrt((d_i + 1)(d_j + 1)).
  const auto own = dense(lg.a_own);
  const auto halo = dense(lg.a_halo);
  EXPECT_FLOAT_EQ(own[0][0], 1.0f / 2);
  EXPECT_FLOAT_EQ(own[0][1], 1.0f / std::sqrt(6.0f));
  EXPECT_FLOAT_EQ(own[1][0], 1.0f / std::sqrt(6.0f));
  EXPECT_FLOAT_EQ(own[1][1], 1.0f / 3);
  EXPECT_FLOAT_EQ(halo[1][0], 1.0f / 3);  // vertex 1 - vertex 2 (halo, global degree 2)
  EXPECT_FLOAT_EQ(own[2][2], 1.0f);        // isolated vertex: only its self-loop
  EXPECT_EQ(lg.a_own.nnz(), 5);
  EXPECT_EQ(lg.a_halo.nnz(), 1);
  EXPECT_TRUE(lg.a_own_symmetric);  // an undirected graph's owned block: the backward uses a_own itself
  EXPECT_EQ(lg.own_transpose().rows, 3);
  EXPECT_EQ(lg.a_own_t.nnz(), 0);
  EXPECT_EQ(lg.a_halo_t.rows, 1);
  EXPECT_EQ(dense(lg.a_halo_t)[0][1], halo[1][0]);
}

TEST(LocalGraph, MeanNormalisationSkipsStoredSelfLoops) {
  graph::Graph g = path_graph();
  const graph::Shard whole = testing::whole_graph_shard(g);
  graph::Shard s = whole;
  // Store a self-loop on vertex 1 (1 -> 1): it must be ignored by both normalisations.
  s.indices = {1, 0, 1, 2, 1, 3, 2};
  s.indptr = {0, 1, 4, 6, 7, 7};
  const auto mean = dense(graph::build_local_graph(s, graph::Normalization::mean).a_own);
  EXPECT_FLOAT_EQ(mean[1][0], 0.5f);
  EXPECT_FLOAT_EQ(mean[1][2], 0.5f);
  EXPECT_FLOAT_EQ(mean[1][1], 0.0f);
  EXPECT_FLOAT_EQ(mean[0][1], 1.0f);
  for (float v : mean[4]) EXPECT_EQ(v, 0.0f);  // isolated: zero row
  const auto gcn_with_loop = dense(graph::build_local_graph(s, graph::Normalization::gcn).a_own);
  const auto gcn = dense(graph::build_local_graph(whole, graph::Normalization::gcn).a_own);
  EXPECT_EQ(gcn_with_loop, gcn);
}

TEST(LocalGraph, TransposeOfTransposeIsIdentity) {
  const graph::Graph g = testing::synthetic_graph(40, 3, 2, 3, 7);
  const graph::Shard s = testing::make_shard(g, std::vector<int32_t>(40, 0), 1, 0);
  const graph::LocalGraph lg = graph::build_local_graph(s, graph::Normalization::gcn);
  const auto a = dense(lg.a_own);
  const auto t = dense(lg.own_transpose());
  for (int64_t i = 0; i < 40; ++i)
    for (int64_t j = 0; j < 40; ++j) EXPECT_EQ(a[i][j], t[j][i]);
  const graph::LocalCsr back = graph::transpose(lg.own_transpose());
  EXPECT_EQ(back.indptr, lg.a_own.indptr);
  EXPECT_EQ(back.indices, lg.a_own.indices);
  EXPECT_EQ(back.values, lg.a_own.values);
}

// A symmetric A_own is not stored twice; the flag must never be set for a matrix that differs from its transpose.
void expect_transpose_is_exact(const graph::LocalGraph& lg) {
  const graph::LocalCsr t = graph::transpose(lg.a_own);
  const graph::LocalCsr& used = lg.own_transpose();
  EXPECT_EQ(used.rows, t.rows);
  EXPECT_EQ(used.indptr, t.indptr);
  EXPECT_EQ(used.indices, t.indices);
  EXPECT_EQ(used.values, t.values);  // bit for bit: the backward must equal the stored transpose's
}

TEST(LocalGraph, SymmetricOwnBlockIsStoredOnceForSymmetricNormalisations) {
  const graph::Graph g = testing::synthetic_graph(60, 3, 2, 4, 11);
  std::vector<int32_t> owner(60);
  for (int v = 0; v < 60; ++v) owner[v] = (v * 7) % 3;
  for (int part = 0; part < 3; ++part) {
    const graph::Shard s = testing::make_shard(g, owner, 3, part);
    ASSERT_GT(s.num_halo(), 0);
    for (auto norm : {graph::Normalization::gcn, graph::Normalization::sum, graph::Normalization::chebyshev}) {
      const graph::LocalGraph lg = graph::build_local_graph(s, norm);
      EXPECT_TRUE(lg.a_own_symmetric) << "part " << part;
      EXPECT_EQ(lg.a_own_t.nnz(), 0);
      expect_transpose_is_exact(lg);
    }
    // The mean scales row i by 1/deg_i: not symmetric, so the transpose is stored.
    const graph::LocalGraph mean = graph::build_local_graph(s, graph::Normalization::mean);
    EXPECT_FALSE(mean.a_own_symmetric);
    EXPECT_EQ(mean.a_own_t.nnz(), mean.a_own.nnz());
    expect_transpose_is_exact(mean);
  }
}

TEST(LocalGraph, DirectedOrUnequallyWeightedBlocksKeepTheirTranspose) {
  graph::Graph g = path_graph();
  graph::Shard s = testing::whole_graph_shard(g);
  // Drop 2 -> 1 (row 2 keeps only 3): a directed edge 1 -> 2.
  s.indices = {1, 0, 2, 3, 2};
  s.indptr = {0, 1, 3, 4, 5, 5};
  const graph::LocalGraph directed = graph::build_local_graph(s, graph::Normalization::gcn);
  EXPECT_FALSE(directed.a_own_symmetric);
  expect_transpose_is_exact(directed);

  graph::Shard w = testing::whole_graph_shard(path_graph());
  w.weight = {1.0f, 1.0f, 2.0f, 2.0f, 1.0f, 1.0f};
  auto build_weighted = [](const graph::Shard& shard) {
    graph::EdgeWeighting weighting;
    weighting.degree_owned = graph::weighted_owned_degrees(shard);
    return graph::build_local_graph(shard, graph::Normalization::gcn, &weighting);
  };
  EXPECT_TRUE(build_weighted(w).a_own_symmetric);
  w.weight[2] = 3.0f;  // 1 -> 2 weighs 3, 2 -> 1 weighs 2
  // The pattern alone is symmetric: unweighted, the block is stored once.
  EXPECT_TRUE(graph::build_local_graph(w, graph::Normalization::gcn).a_own_symmetric);
  const graph::LocalGraph weighted = build_weighted(w);
  EXPECT_FALSE(weighted.a_own_symmetric);
  expect_transpose_is_exact(weighted);
}

}  // namespace
}  // namespace halogen
