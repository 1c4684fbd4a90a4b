// LocalGraph: GCN / mean normalisation with global degrees, the A_own / A_halo column split and transposes,
// on hand-checked shards.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/local_graph.h"
#include "train/synthetic_graph.h"

namespace halogen {
namespace {

// Dense (rows x cols) copy of a LocalCsr (stored or implicit values).
std::vector<std::vector<float>> dense(const graph::LocalCsr& a) {
  const std::vector<float> values = graph::explicit_values(a);
  std::vector<std::vector<float>> d(a.rows, std::vector<float>(a.cols, 0.0f));
  for (int64_t r = 0; r < a.rows; ++r) {
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      if (k > a.indptr[r]) {
        EXPECT_LT(a.indices[k - 1], a.indices[k]) << "row " << r << " not sorted";
      }
      d[r][a.indices[k]] = values[k];
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
  EXPECT_EQ(graph::explicit_values(back), graph::explicit_values(lg.a_own));
}

// A symmetric A_own is not stored twice; the flag must never be set for a matrix that differs from its transpose.
void expect_transpose_is_exact(const graph::LocalGraph& lg) {
  const graph::LocalCsr t = graph::transpose(lg.a_own);
  const graph::LocalCsr& used = lg.own_transpose();
  EXPECT_EQ(used.rows, t.rows);
  EXPECT_EQ(used.indptr, t.indptr);
  EXPECT_EQ(used.indices, t.indices);
  // bit for bit: the backward must equal the stored transpose's
  EXPECT_EQ(graph::explicit_values(used), graph::explicit_values(t));
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

// ---- implicit values (issue #36): what build_local_graph stores per normalisation
// ----------------------------

// The values the builder stored before the implicit form (one float per entry, the formula in double rounded
// once), for a shard whose halo degrees are in degree_halo: the reference the implicit values are held to.
std::vector<float> stored_reference(const graph::Shard& s, const graph::LocalCsr& a, bool halo_block,
                                    graph::Normalization normalization) {
  std::vector<float> values;
  for (int64_t r = 0; r < a.rows; ++r) {
    int64_t neighbours = 0;
    for (int64_t k = s.indptr[r]; k < s.indptr[r + 1]; ++k) neighbours += s.indices[k] != r;
    const double deg_r = static_cast<double>(s.degree_owned[r]);
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      const int64_t c = a.indices[k];
      const double deg_c = static_cast<double>(halo_block ? s.degree_halo[c] : s.degree_owned[c]);
      if (normalization == graph::Normalization::gcn)
        values.push_back(!halo_block && c == r
                             ? static_cast<float>(1.0 / (deg_r + 1.0))
                             : static_cast<float>(1.0 / std::sqrt((deg_r + 1.0) * (deg_c + 1.0))));
      else if (normalization == graph::Normalization::mean)
        values.push_back(static_cast<float>(1.0 / static_cast<double>(neighbours)));
      else
        values.push_back(1.0f);
    }
  }
  return values;
}

// Each implicit factor is rounded once (<= 2^-24 relative) and their product once more, so an implicit gcn
// value is within 3 * 2^-24 of the exact one, the stored float within 2^-24: at most 4 * 2^-24 ~ 2.4e-7
// apart.
constexpr double kImplicitTolerance = 4.0 * 5.97e-8;

TEST(LocalGraph, ImplicitValuesEqualTheStoredOnesForGcnMeanSum) {
  const graph::Graph g = testing::synthetic_graph(60, 3, 2, 4, 11);
  std::vector<int32_t> owner(60);
  for (int v = 0; v < 60; ++v) owner[v] = (v * 7) % 3;
  for (int part = 0; part < 3; ++part) {
    const graph::Shard s = testing::make_shard(g, owner, 3, part);
    ASSERT_GT(s.num_halo(), 0);
    for (auto norm : {graph::Normalization::gcn, graph::Normalization::mean, graph::Normalization::sum}) {
      SCOPED_TRACE(::testing::Message() << "part " << part << " normalisation " << static_cast<int>(norm));
      const graph::LocalGraph lg = graph::build_local_graph(s, norm);
      for (const graph::LocalCsr* a : {&lg.a_own, &lg.a_halo, &lg.a_own_t, &lg.a_halo_t})
        EXPECT_TRUE(a->values.empty()) << "an unweighted gcn/mean/sum matrix stores no values";
      // The factors: gcn both (A_own's the same vector), mean the rows, sum none.
      const bool rows = norm != graph::Normalization::sum, cols = norm == graph::Normalization::gcn;
      EXPECT_EQ(lg.a_own.row_scale.size(), rows ? size_t(s.num_owned()) : 0u);
      EXPECT_EQ(lg.a_own.col_scale.size(), cols ? size_t(s.num_owned()) : 0u);
      EXPECT_EQ(lg.a_halo.row_scale.size(), rows ? size_t(s.num_owned()) : 0u);
      EXPECT_EQ(lg.a_halo.col_scale.size(), cols ? size_t(s.num_halo()) : 0u);
      if (cols) {
        EXPECT_EQ(lg.a_own.row_scale, lg.a_own.col_scale);
      }
      for (bool halo : {false, true}) {
        const graph::LocalCsr& a = halo ? lg.a_halo : lg.a_own;
        const std::vector<float> implicit = graph::explicit_values(a);
        const std::vector<float> stored = stored_reference(s, a, halo, norm);
        ASSERT_EQ(implicit.size(), stored.size());
        for (size_t k = 0; k < stored.size(); ++k) {
          if (norm == graph::Normalization::gcn)
            EXPECT_NEAR(implicit[k], stored[k], kImplicitTolerance * stored[k])
                << (halo ? "halo " : "own ") << k;
          else  // mean: the same 1/neighbours float times 1; sum: ones
            EXPECT_EQ(implicit[k], stored[k]) << (halo ? "halo " : "own ") << k;
        }
      }
      // The transposes: the same entries with the factors swapped.
      const graph::LocalCsr halo_t = graph::transpose(lg.a_halo);
      EXPECT_EQ(lg.a_halo_t.row_scale, lg.a_halo.col_scale);
      EXPECT_EQ(lg.a_halo_t.col_scale, lg.a_halo.row_scale);
      EXPECT_EQ(graph::explicit_values(lg.a_halo_t), graph::explicit_values(halo_t));
    }
  }
}

TEST(LocalGraph, TransposeSwapsTheFactors) {
  graph::LocalCsr a;  // 2 x 3: row 0 = {0, 2}, row 1 = {1}
  a.rows = 2;
  a.cols = 3;
  a.indptr = {0, 2, 3};
  a.indices = {0, 2, 1};
  a.row_scale = {2.0f, 3.0f};
  a.col_scale = {5.0f, 7.0f, 11.0f};
  EXPECT_EQ(graph::explicit_values(a), (std::vector<float>{10.0f, 22.0f, 21.0f}));
  const graph::LocalCsr t = graph::transpose(a);
  EXPECT_TRUE(t.values.empty());
  EXPECT_EQ(t.row_scale, a.col_scale);
  EXPECT_EQ(t.col_scale, a.row_scale);
  EXPECT_EQ(t.indptr, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(graph::explicit_values(t), (std::vector<float>{10.0f, 21.0f, 22.0f}));
  a.col_scale.clear();  // a row factor alone
  EXPECT_EQ(graph::explicit_values(a), (std::vector<float>{2.0f, 2.0f, 3.0f}));
  EXPECT_EQ(graph::explicit_values(graph::transpose(a)), (std::vector<float>{2.0f, 3.0f, 2.0f}));
  a.row_scale.clear();  // no values, no factors: all ones
  EXPECT_EQ(graph::explicit_values(a), (std::vector<float>{1.0f, 1.0f, 1.0f}));
}

TEST(LocalGraph, ChebyshevAndWeightedKeepStoredValues) {
  const graph::Graph g = testing::synthetic_graph(60, 3, 2, 4, 11);
  std::vector<int32_t> owner(60);
  for (int v = 0; v < 60; ++v) owner[v] = (v * 7) % 3;
  const graph::Shard s = testing::make_shard(g, owner, 3, 1);
  const graph::LocalGraph cheb = graph::build_local_graph(s, graph::Normalization::chebyshev);
  EXPECT_EQ(cheb.a_own.values.size(), size_t(cheb.a_own.nnz()));
  EXPECT_EQ(cheb.a_halo.values.size(), size_t(cheb.a_halo.nnz()));
  EXPECT_TRUE(cheb.a_own.row_scale.empty() && cheb.a_own.col_scale.empty());
  // -1/sqrt(deg_r deg_c), as before.
  for (int64_t r = 0; r < cheb.a_own.rows; ++r)
    for (int64_t k = cheb.a_own.indptr[r]; k < cheb.a_own.indptr[r + 1]; ++k) {
      const double dr = static_cast<double>(s.degree_owned[r]);
      const double dc = static_cast<double>(s.degree_owned[cheb.a_own.indices[k]]);
      EXPECT_EQ(cheb.a_own.values[k], static_cast<float>(-1.0 / std::sqrt(dr * dc)));
    }

  graph::Shard w = testing::whole_graph_shard(path_graph());
  w.weight = {1.0f, 1.0f, 2.0f, 2.0f, 1.0f, 1.0f};
  graph::EdgeWeighting weighting;
  weighting.degree_owned = graph::weighted_owned_degrees(w);
  for (auto norm : {graph::Normalization::gcn, graph::Normalization::mean, graph::Normalization::sum}) {
    const graph::LocalGraph lg = graph::build_local_graph(w, norm, &weighting);
    EXPECT_EQ(lg.a_own.values.size(), size_t(lg.a_own.nnz())) << static_cast<int>(norm);
    EXPECT_TRUE(lg.a_own.row_scale.empty() && lg.a_own.col_scale.empty());
  }
  // Weighted gcn: w_ij / sqrt((d_i+1)(d_j+1)), vertex 1 (d = 3) - vertex 2 (d = 3) weighs 2.
  const auto gcn = dense(graph::build_local_graph(w, graph::Normalization::gcn, &weighting).a_own);
  EXPECT_EQ(gcn[1][2], static_cast<float>(2.0 / std::sqrt(4.0 * 4.0)));
}

}  // namespace
}  // namespace halogen
