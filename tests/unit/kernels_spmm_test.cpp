// CPU SpMM against a naive double-precision reference: widths around the vector tiles (1..130), strided
// views, empty rows, empty and single-row matrices, pattern (all-ones) matrices, accumulate on and off, and
// bitwise determinism across thread counts.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>

#include "kernels/cpu/ops.h"
#include "kernels/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using namespace halogen::kernels;
using namespace halogen::kernels::test;

namespace {

struct SpmmCase {
  int64_t rows, cols, width;
  int avg_degree;
  int64_t x_padding, out_padding;
  bool with_values, accumulate;
};

// Runs one case through kernels::spmm and checks every element against the reference.
void check_spmm(const SpmmCase& t, uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "rows " << t.rows << " cols " << t.cols << " width " << t.width
                                  << " values " << t.with_values << " accumulate " << t.accumulate
                                  << " padding " << t.x_padding << "/" << t.out_padding);
  std::mt19937_64 gen(seed);
  const HostCsr a = random_csr(gen, t.rows, t.cols, t.avg_degree);
  HostMatrix x(t.cols, t.width, t.x_padding), out(t.rows, t.width, t.out_padding);
  x.randomize(gen);
  out.randomize(gen);
  const std::vector<double> expected = naive_spmm(a, t.with_values, x, out, t.accumulate);
  spmm(a.view(t.with_values), x.cview(), out.view(), t.accumulate);
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t degree = a.indptr[r + 1] - a.indptr[r];
    for (int64_t c = 0; c < t.width; ++c) {
      double abs_sum = t.accumulate ? std::fabs(static_cast<double>(out(r, c))) : 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        abs_sum += std::fabs((t.with_values ? a.values[k] : 1.0) * x(a.indices[k], c));
      // Float summation of degree+1 terms: error <= (degree + 1) * 2^-24 * sum |terms| (Higham); doubled.
      const double tolerance = 2.0 * (degree + 1) * 5.97e-8 * abs_sum + 1e-30;
      ASSERT_NEAR(out(r, c), expected[r * t.width + c], tolerance) << "at (" << r << ", " << c << ")";
    }
  }
  EXPECT_TRUE(out.padding_intact()) << "spmm wrote into the padding of a strided output";
}

}  // namespace

TEST(CpuSpmm, MatchesNaiveForWidthsAroundVectorTiles) {
  // Both compiled variants (AVX2 where the CPU has it, and baseline SSE2) on every width.
  for (bool avx2 : {true, false}) {
    SCOPED_TRACE(avx2 ? "avx2 allowed" : "baseline only");
    const bool saved = cpu::set_spmm_avx2_allowed(avx2);
    uint64_t seed = 1;
    for (int64_t width : {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 128, 130})
      for (bool accumulate : {false, true}) check_spmm({50, 40, width, 4, 0, 0, true, accumulate}, seed++);
    cpu::set_spmm_avx2_allowed(saved);
  }
}

TEST(CpuSpmm, VariantsAndNaiveFloatLoopAgreeBitwise) {
  // Every variant adds a row's nonzeros in index order with separate multiply and add, so the AVX2 and the
  // baseline build agree bitwise with each other and with the plain float loop below.
  std::mt19937_64 gen(10);
  const HostCsr a = random_csr(gen, 200, 150, 6);
  for (int64_t width : {5, 16, 72}) {
    HostMatrix x(150, width);
    x.randomize(gen);
    HostMatrix plain(200, width);
    for (int64_t r = 0; r < 200; ++r)
      for (int64_t c = 0; c < width; ++c) {
        float sum = 0.0f;
        for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
          const float product = a.values[k] * x(a.indices[k], c);
          sum += product;
        }
        plain(r, c) = sum;
      }
    for (bool avx2 : {true, false}) {
      const bool saved = cpu::set_spmm_avx2_allowed(avx2);
      HostMatrix out(200, width);
      spmm(a.view(), x.cview(), out.view(), false);
      cpu::set_spmm_avx2_allowed(saved);
      EXPECT_EQ(out.data, plain.data) << "width " << width << (avx2 ? " avx2 allowed" : " baseline");
    }
  }
}

TEST(CpuSpmm, StridedViews) {
  uint64_t seed = 100;
  for (int64_t width : {1, 7, 16, 33, 70})
    for (bool accumulate : {false, true}) check_spmm({30, 25, width, 3, 5, 3, true, accumulate}, seed++);
}

TEST(CpuSpmm, PatternMatrixUsesOnes) {
  uint64_t seed = 200;
  for (int64_t width : {1, 16, 37})
    for (bool accumulate : {false, true}) check_spmm({40, 40, width, 5, 1, 0, false, accumulate}, seed++);
}

TEST(CpuSpmm, RectangularAndDegenerateShapes) {
  check_spmm({1, 1, 8, 1, 0, 0, true, false}, 300);     // one row
  check_spmm({1, 500, 19, 50, 0, 0, true, true}, 301);  // one dense-ish row
  check_spmm({300, 3, 24, 2, 0, 0, true, false}, 302);  // tall, few columns
  check_spmm({5, 0, 8, 2, 0, 0, true, false}, 303);     // no columns: all rows empty, out = 0
  check_spmm({5, 0, 8, 2, 0, 0, true, true}, 304);      // ... or unchanged
  check_spmm({0, 10, 8, 2, 0, 0, true, false}, 305);    // no rows
  check_spmm({10, 10, 0, 2, 0, 0, true, false}, 306);   // zero width
}

TEST(CpuSpmm, EmptyRowsOverwriteOrKeep) {
  // A matrix whose rows are all empty: out becomes exactly 0 without accumulate, and stays as it was with it.
  HostCsr a;
  a.rows = 4;
  a.cols = 4;
  a.indptr = {0, 0, 0, 0, 0};
  HostMatrix x(4, 9), out(4, 9);
  std::mt19937_64 gen(7);
  x.randomize(gen);
  out.randomize(gen);
  const HostMatrix before = out;
  spmm(a.view(), x.cview(), out.view(), /*accumulate=*/true);
  EXPECT_EQ(out.data, before.data);
  spmm(a.view(), x.cview(), out.view(), /*accumulate=*/false);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 9; ++c) EXPECT_EQ(out(r, c), 0.0f);
}

TEST(CpuSpmm, OverwriteIgnoresNaNInOutput) {
  // accumulate=false must not read out: a NaN already there must not leak into the result.
  std::mt19937_64 gen(8);
  const HostCsr a = random_csr(gen, 20, 20, 3);
  HostMatrix x(20, 21), out(20, 21);
  x.randomize(gen);
  for (float& value : out.data) value = std::nanf("");
  spmm(a.view(), x.cview(), out.view(), false);
  for (int64_t r = 0; r < 20; ++r)
    for (int64_t c = 0; c < 21; ++c) ASSERT_FALSE(std::isnan(out(r, c))) << r << ", " << c;
}

TEST(CpuSpmm, BitwiseIdenticalForAnyThreadCount) {
  std::mt19937_64 gen(9);
  const HostCsr a = random_csr(gen, 3000, 2000, 8);
  HostMatrix x(2000, 40);
  x.randomize(gen);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3, 7}) {
    omp_set_num_threads(threads);
    HostMatrix out(3000, 40);
    spmm(a.view(), x.cview(), out.view(), false);
    results.push_back(out.data);
  }
  omp_set_num_threads(saved);
  for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[0], results[i]) << "thread setting " << i;
}

// ---- implicit values: row and column scales (kernels/ops.h CsrView; graph/local_graph.h)
// ---------------------

namespace {

struct Scales {
  std::vector<float> row, col;  // empty: that factor absent
};

// Random factors in (0, 1] (as 1/sqrt(deg + 1) and 1/deg are), a few rows of 0 (mean's isolated rows).
Scales random_scales(std::mt19937_64& gen, int64_t rows, int64_t cols, bool with_rows, bool with_cols) {
  std::uniform_real_distribution<float> dist(0.05f, 1.0f);
  Scales s;
  if (with_rows) {
    for (int64_t r = 0; r < rows; ++r) s.row.push_back(r % 11 == 4 ? 0.0f : dist(gen));
  }
  if (with_cols) {
    for (int64_t c = 0; c < cols; ++c) s.col.push_back(dist(gen));
  }
  return s;
}

CsrView scaled_view(const HostCsr& a, const Scales& s) {
  CsrView view = a.view(/*with_values=*/false);
  view.row_scale = s.row.empty() ? nullptr : s.row.data();
  view.col_scale = s.col.empty() ? nullptr : s.col.data();
  return view;
}

// One scaled case against a double reference out[r] = (accumulate ? out[r] : 0) + row[r] sum_k col[c_k]
// x[c_k].
void check_scaled_spmm(const SpmmCase& t, bool with_rows, bool with_cols, uint64_t seed) {
  SCOPED_TRACE(testing::Message() << "rows " << t.rows << " width " << t.width << " row_scale " << with_rows
                                  << " col_scale " << with_cols << " accumulate " << t.accumulate
                                  << " padding " << t.x_padding << "/" << t.out_padding);
  std::mt19937_64 gen(seed);
  const HostCsr a = random_csr(gen, t.rows, t.cols, t.avg_degree);
  const Scales s = random_scales(gen, t.rows, t.cols, with_rows, with_cols);
  HostMatrix x(t.cols, t.width, t.x_padding), out(t.rows, t.width, t.out_padding);
  x.randomize(gen);
  out.randomize(gen);
  const HostMatrix before = out;
  spmm(scaled_view(a, s), x.cview(), out.view(), t.accumulate);
  for (int64_t r = 0; r < t.rows; ++r) {
    const int64_t degree = a.indptr[r + 1] - a.indptr[r];
    const double row = s.row.empty() ? 1.0 : s.row[r];
    for (int64_t c = 0; c < t.width; ++c) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        const double term = (s.col.empty() ? 1.0 : s.col[a.indices[k]]) * x(a.indices[k], c);
        sum += term;
        abs_sum += std::fabs(term);
      }
      const double kept = t.accumulate ? before(r, c) : 0.0;
      const double expected = kept + row * sum;
      // Float: degree products and sums, then one multiply by the row factor and one add: error <=
      // (degree + 2) * 2^-24 * (|kept| + |row| sum |terms|) (Higham), doubled.
      const double tolerance =
          2.0 * (degree + 2) * 5.97e-8 * (std::fabs(kept) + std::fabs(row) * abs_sum) + 1e-30;
      ASSERT_NEAR(out(r, c), expected, tolerance) << "at (" << r << ", " << c << ")";
    }
  }
  EXPECT_TRUE(out.padding_intact()) << "spmm wrote into the padding of a strided output";
}

}  // namespace

TEST(CpuSpmm, ScalesMatchNaiveForWidthsAroundVectorTiles) {
  // Every tile size (8, 4, 2, 1 vectors of 8 or 4 lanes) and the tail, both builds, each factor alone and
  // both.
  for (bool avx2 : {true, false}) {
    SCOPED_TRACE(avx2 ? "avx2 allowed" : "baseline only");
    const bool saved = cpu::set_spmm_avx2_allowed(avx2);
    uint64_t seed = 400;
    for (int64_t width : {1, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 130})
      for (bool accumulate : {false, true})
        for (auto [rows, cols] : {std::pair{true, false}, {false, true}, {true, true}})
          check_scaled_spmm({50, 40, width, 4, 0, 0, false, accumulate}, rows, cols, seed++);
    cpu::set_spmm_avx2_allowed(saved);
  }
}

TEST(CpuSpmm, ScalesWithStridedViewsAndDegenerateShapes) {
  uint64_t seed = 500;
  for (int64_t width : {1, 7, 33})
    for (bool accumulate : {false, true})
      check_scaled_spmm({30, 25, width, 3, 5, 3, false, accumulate}, true, true, seed++);
  check_scaled_spmm({1, 500, 19, 50, 0, 0, false, true}, true, true, seed++);  // one dense-ish row
  check_scaled_spmm({5, 0, 8, 2, 0, 0, false, false}, true, false, seed++);    // no columns: out = 0
  check_scaled_spmm({5, 0, 8, 2, 0, 0, false, true}, true, false, seed++);     // ... or unchanged
  check_scaled_spmm({0, 10, 8, 2, 0, 0, false, false}, false, true, seed++);   // no rows
}

TEST(CpuSpmm, ScaledVariantsAndNaiveFloatLoopAgreeBitwise) {
  // The column factor takes a stored value's place (one multiply per nonzero, added in index order) and the
  // row factor multiplies the row's float sum once, then is added to the output: both builds give this loop's
  // bits.
  std::mt19937_64 gen(11);
  const HostCsr a = random_csr(gen, 200, 150, 6);
  const Scales s = random_scales(gen, 200, 150, true, true);
  for (int64_t width : {5, 16, 72}) {
    HostMatrix x(150, width), start(200, width);
    x.randomize(gen);
    start.randomize(gen);
    for (bool accumulate : {false, true}) {
      HostMatrix plain(200, width);
      for (int64_t r = 0; r < 200; ++r)
        for (int64_t c = 0; c < width; ++c) {
          float sum = 0.0f;
          for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
            const float product = s.col[a.indices[k]] * x(a.indices[k], c);
            sum += product;
          }
          const float scaled = s.row[r] * sum;
          plain(r, c) = accumulate ? start(r, c) + scaled : scaled;
        }
      for (bool avx2 : {true, false}) {
        const bool saved = cpu::set_spmm_avx2_allowed(avx2);
        HostMatrix out = start;
        spmm(scaled_view(a, s), x.cview(), out.view(), accumulate);
        cpu::set_spmm_avx2_allowed(saved);
        EXPECT_EQ(out.data, plain.data)
            << "width " << width << " accumulate " << accumulate << (avx2 ? " avx2 allowed" : " baseline");
      }
    }
  }
}

TEST(CpuSpmm, ScaledProductEqualsTheMaterialisedMatrixToRounding) {
  // The same matrix with its values stored (row[r] * col[c] as a float) and implicit: equal to the rounding
  // of a different association (a few ulps of the row's sum of |terms|).
  std::mt19937_64 gen(12);
  HostCsr a = random_csr(gen, 300, 300, 5);
  const Scales s = random_scales(gen, 300, 300, true, true);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) a.values[k] = s.row[r] * s.col[a.indices[k]];
  HostMatrix x(300, 24), stored(300, 24), implicit(300, 24);
  x.randomize(gen);
  spmm(a.view(), x.cview(), stored.view(), false);
  spmm(scaled_view(a, s), x.cview(), implicit.view(), false);
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t degree = a.indptr[r + 1] - a.indptr[r];
    for (int64_t c = 0; c < 24; ++c) {
      double abs_sum = 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k)
        abs_sum += std::fabs(a.values[k] * x(a.indices[k], c));
      // Each side within (degree + 2) 2^-24 abs_sum of the exact value (Higham), so twice that apart;
      // doubled.
      const double tolerance = 4.0 * (degree + 2) * 5.97e-8 * abs_sum + 1e-30;
      ASSERT_NEAR(implicit(r, c), stored(r, c), tolerance) << "at (" << r << ", " << c << ")";
    }
  }
}
