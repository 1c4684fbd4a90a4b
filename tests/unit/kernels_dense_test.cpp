// CPU dense ops against naive references: gemm (all transpose combinations, strided views, alpha/beta, beta =
// 0 ignoring NaN in c, k = 0), bias add and its backward, the fused bias/ReLU/dropout epilogue, dropout and
// mask application (exact expected values from the RNG contract).
#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <numeric>
#include <random>

#include "core/rng.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"
#include "kernels/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using namespace halogen::kernels;
using namespace halogen::kernels::test;

namespace {

// A matrix stored so that op(stored) has shape (rows, cols).
HostMatrix random_operand(std::mt19937_64& gen, int64_t rows, int64_t cols, bool transposed,
                          int64_t padding) {
  HostMatrix m = transposed ? HostMatrix(cols, rows, padding) : HostMatrix(rows, cols, padding);
  m.randomize(gen);
  return m;
}

float op_element(const HostMatrix& m, bool transposed, int64_t r, int64_t c) {
  return transposed ? m(c, r) : m(r, c);
}

}  // namespace

TEST(CpuGemm, MatchesNaiveForAllTransposesAndStrides) {
  std::mt19937_64 gen(11);
  for (bool transpose_a : {false, true})
    for (bool transpose_b : {false, true})
      for (int64_t padding : {0, 3})
        for (auto [m, k, n] :
             {std::array<int64_t, 3>{1, 1, 1}, {7, 5, 3}, {33, 17, 9}, {64, 70, 16}, {2, 129, 1}}) {
          SCOPED_TRACE(testing::Message() << "ta " << transpose_a << " tb " << transpose_b << " pad "
                                          << padding << " m " << m << " k " << k << " n " << n);
          const HostMatrix a = random_operand(gen, m, k, transpose_a, padding);
          const HostMatrix b = random_operand(gen, k, n, transpose_b, padding);
          HostMatrix c(m, n, padding);
          c.randomize(gen);
          const HostMatrix c_before = c;
          const float alpha = 0.75f, beta = -0.5f;
          gemm(a.cview(), transpose_a, b.cview(), transpose_b, c.view(), alpha, beta);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0.0, abs_sum = 0.0;
              for (int64_t l = 0; l < k; ++l) {
                const double term =
                    double(op_element(a, transpose_a, i, l)) * op_element(b, transpose_b, l, j);
                sum += term;
                abs_sum += std::fabs(term);
              }
              const double expected = alpha * sum + beta * c_before(i, j);
              // Float dot product of k terms (any order, FMA or not): error <= k * 2^-24 * sum |terms|;
              // doubled.
              ASSERT_NEAR(c(i, j), expected, 2.0 * (k + 2) * 5.97e-8 * (abs_sum + std::fabs(c_before(i, j))));
            }
          EXPECT_TRUE(c.padding_intact());
        }
}

TEST(CpuGemm, ParallelSplitsMatchNaive) {
  // With several threads the CPU gemm splits the product by rows of c, by blocks of k (weight gradients), or
  // by columns of c; each split, every transpose combination and strided views against the double reference.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  std::mt19937_64 gen(19);
  for (auto [m, k, n] : {std::array<int64_t, 3>{200, 100, 60},  // rows of c
                         {20, 9000, 12},                        // blocks of k
                         {40, 200, 300}})                       // columns of c
    for (bool transpose_a : {false, true})
      for (bool transpose_b : {false, true}) {
        SCOPED_TRACE(testing::Message() << "m " << m << " k " << k << " n " << n << " ta " << transpose_a
                                        << " tb " << transpose_b);
        const HostMatrix a = random_operand(gen, m, k, transpose_a, 2);
        const HostMatrix b = random_operand(gen, k, n, transpose_b, 1);
        HostMatrix c(m, n, 3);
        c.randomize(gen);
        const HostMatrix c_before = c;
        const float alpha = 1.5f, beta = 0.25f;
        gemm(a.cview(), transpose_a, b.cview(), transpose_b, c.view(), alpha, beta);
        int64_t wrong = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0.0, abs_sum = 0.0;
            for (int64_t l = 0; l < k; ++l) {
              const double term = double(op_element(a, transpose_a, i, l)) * op_element(b, transpose_b, l, j);
              sum += term;
              abs_sum += std::fabs(term);
            }
            const double expected = alpha * sum + beta * c_before(i, j);
            // Float dot product of k terms in any order: error <= k 2^-24 sum |terms|; doubled, plus beta c.
            if (!(std::fabs(c(i, j) - expected) <=
                  2.0 * (k + 2) * 5.97e-8 * (alpha * abs_sum + std::fabs(beta * c_before(i, j)))))
              ++wrong;
          }
        EXPECT_EQ(wrong, 0);
        EXPECT_TRUE(c.padding_intact());
      }
  omp_set_num_threads(saved);
}

TEST(CpuGemm, WeightGradientBitwiseIdenticalForAnyThreadCount) {
  // dW = H^T dZ with a long inner dimension is summed in fixed blocks: the same bits for 2, 3 or 5 threads.
  std::mt19937_64 gen(20);
  HostMatrix h(20000, 24), grad_z(20000, 10);
  h.randomize(gen);
  grad_z.randomize(gen);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {2, 3, 5}) {
    omp_set_num_threads(threads);
    HostMatrix grad_w(24, 10);
    gemm(h.cview(), true, grad_z.cview(), false, grad_w.view(), 1.0f, 0.0f);
    results.push_back(grad_w.data);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(CpuGemm, BetaZeroIgnoresNaNAndKZeroScales) {
  std::mt19937_64 gen(12);
  HostMatrix a(4, 3), b(3, 5), c(4, 5);
  a.randomize(gen);
  b.randomize(gen);
  for (float& value : c.data) value = std::nanf("");
  gemm(a.cview(), false, b.cview(), false, c.view(), 1.0f, 0.0f);
  for (float value : c.data) EXPECT_FALSE(std::isnan(value));
  // k = 0: c = beta c (and beta = 0 writes zeros even over NaN).
  HostMatrix a0(4, 0), b0(0, 5);
  HostMatrix c2(4, 5);
  c2.randomize(gen);
  const HostMatrix c2_before = c2;
  gemm(a0.cview(), false, b0.cview(), false, c2.view(), 1.0f, 2.0f);
  for (size_t i = 0; i < c2.data.size(); ++i) EXPECT_EQ(c2.data[i], 2.0f * c2_before.data[i]);
  for (float& value : c2.data) value = std::nanf("");
  gemm(a0.cview(), false, b0.cview(), false, c2.view(), 1.0f, 0.0f);
  for (float value : c2.data) EXPECT_EQ(value, 0.0f);
}

TEST(CpuBias, AddAndBackward) {
  std::mt19937_64 gen(13);
  for (int64_t width : {1, 5, 16, 37})
    for (int64_t rows : {0, 1, 3, 2500}) {  // 2500 rows spans several reduction blocks
      HostMatrix h(rows, width, 2);
      h.randomize(gen);
      const HostMatrix before = h;
      std::vector<float> bias(width);
      for (float& value : bias) value = std::uniform_real_distribution<float>(-1, 1)(gen);
      add_bias(h.view(), Span<const float>{bias.data(), width});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < width; ++c) ASSERT_EQ(h(r, c), before(r, c) + bias[c]);
      EXPECT_TRUE(h.padding_intact());

      std::vector<float> grad_bias(width, 0.5f);  // "+=": starts from 0.5
      bias_backward(before.cview(), Span<float>{grad_bias.data(), width});
      for (int64_t c = 0; c < width; ++c) {
        double sum = 0.5, abs_sum = 0.5;
        for (int64_t r = 0; r < rows; ++r) {
          sum += before(r, c);
          abs_sum += std::fabs(before(r, c));
        }
        // Blocked float sums of <= 1024 terms then a double sum: error <= 1024 * 2^-24 * sum |terms|.
        EXPECT_NEAR(grad_bias[c], sum, 1024 * 5.97e-8 * abs_sum + 1e-6) << "column " << c << " rows " << rows;
      }
    }
}

TEST(CpuBias, BackwardBitwiseIdenticalForAnyThreadCount) {
  std::mt19937_64 gen(14);
  HostMatrix g(5000, 24);
  g.randomize(gen);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 5}) {
    omp_set_num_threads(threads);
    std::vector<float> grad_bias(24, 0.0f);
    bias_backward(g.cview(), Span<float>{grad_bias.data(), 24});
    results.push_back(grad_bias);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

namespace {

// The epilogue's contract written out element by element.
void expected_epilogue(const HostMatrix& before, const std::vector<float>& bias,
                       const std::vector<int64_t>& gid, const EpilogueParams& params, HostMatrix& h,
                       HostMatrix& mask) {
  const float keep_scale = 1.0f / (1.0f - params.dropout);
  for (int64_t r = 0; r < before.rows; ++r)
    for (int64_t c = 0; c < before.cols; ++c) {
      const float pre = bias.empty() ? before(r, c) : before(r, c) + bias[c];
      float factor = 1.0f;
      if (params.dropout > 0.0f)
        factor = rng::dropout_keep(params.seed, params.rng_stream, uint64_t(gid[r]) * before.cols + c,
                                   rng::dropout_threshold(params.dropout))
                     ? keep_scale
                     : 0.0f;
      if (params.relu && pre <= 0.0f) factor = 0.0f;
      mask(r, c) = factor;
      h(r, c) = pre * factor;
    }
}

}  // namespace

TEST(CpuEpilogue, BiasReluDropoutMatchesContract) {
  std::mt19937_64 gen(15);
  for (bool relu : {false, true})
    for (float p : {0.0f, 0.5f, 0.1f})
      for (bool with_bias : {false, true})
        for (int64_t width : {1, 7, 16, 33, 130}) {  // 130: several blocks of 64 draws per row
          SCOPED_TRACE(testing::Message()
                       << "relu " << relu << " p " << p << " bias " << with_bias << " width " << width);
          const int64_t rows = 40;
          HostMatrix h(rows, width, 1), mask(rows, width, 2);
          h.randomize(gen);
          const HostMatrix before = h;
          std::vector<float> bias;
          if (with_bias)
            for (int64_t c = 0; c < width; ++c)
              bias.push_back(std::uniform_real_distribution<float>(-.5, .5)(gen));
          std::vector<int64_t> gid(rows);
          for (int64_t r = 0; r < rows; ++r) gid[r] = 1000 + 3 * r;  // global ids unrelated to local ones
          EpilogueParams params;
          params.relu = relu;
          params.dropout = p;
          params.seed = 77;
          params.rng_stream = rng::stream_id(rng::kDropout, 4, 1);
          bias_relu_dropout(h.view(), Span<const float>{bias.data(), int64_t(bias.size())},
                            Span<const int64_t>{gid.data(), rows}, params, mask.view());
          HostMatrix want_h(rows, width), want_mask(rows, width);
          expected_epilogue(before, bias, gid, params, want_h, want_mask);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < width; ++c) {
              ASSERT_EQ(h(r, c), want_h(r, c)) << r << ", " << c;
              ASSERT_EQ(mask(r, c), want_mask(r, c)) << r << ", " << c;
            }
          EXPECT_TRUE(h.padding_intact());
          EXPECT_TRUE(mask.padding_intact());
        }
}

TEST(CpuEpilogue, DropoutCounterCarriesPast32Bits) {
  // Four elements share a Philox call, so the counter is index / 4. Row 818089008 of a 21-wide matrix starts at
  // index 2^34 - 16 (counter 2^32 - 4) and row 132152839 of a 130-wide one at 2^34 - 114 (counter 2^32 - 29): the
  // counter's low word wraps inside the row, in the 130-wide one inside a vector of 16 (AVX-512) counters, and
  // the draw must carry into the high word as rng::bits does. Row 5: an ordinary one.
  for (int64_t width : {21, 130}) {
    SCOPED_TRACE(width);
    std::vector<int64_t> gid = {width == 21 ? 818089008 : 132152839, width == 21 ? 818089009 : 132152840, 5};
    HostMatrix x(3, width), out(3, width), mask(3, width);
    for (float& value : x.data) value = 1.0f;
    EpilogueParams params;
    params.dropout = 0.5f;
    params.seed = 0x123456789abcdefull;
    params.rng_stream = rng::stream_id(rng::kDropout, 1, 2);
    dropout(x.cview(), Span<const int64_t>{gid.data(), 3}, params, out.view(), mask.view());
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < width; ++c) {
        const uint64_t index = uint64_t(gid[r]) * width + c;
        const bool keep = rng::bits(params.seed, params.rng_stream, index / 4).v[index % 4] >= 0x80000000u;
        ASSERT_EQ(mask(r, c), keep ? 2.0f : 0.0f) << r << ", " << c;
      }
  }
}

TEST(CpuEpilogue, KeyedColumnDropoutMatchesRngPerElement) {
  // A single column whose row ids are arbitrary element indices (sparse features keyed gid * F + c): the
  // eight-at-a-time path and its tail give rng::dropout_word's decision for each, including indices whose
  // counters pass 2^32 and neighbours that share a Philox call; the values are x * factor, in place too.
  std::mt19937_64 gen(23);
  for (int64_t n : {1, 7, 8, 9, 64, 1003}) {
    SCOPED_TRACE(n);
    std::vector<int64_t> key(n);
    for (int64_t i = 0; i < n; ++i)
      key[i] = i % 5 == 0 ? (int64_t(1) << 34) - 3 + i : i % 5 == 1 ? 4 * i + 2
                                                                    : static_cast<int64_t>(gen() >> 2);
    HostMatrix x(n, 1), out(n, 1), mask(n, 1);
    x.randomize(gen);
    EpilogueParams params;
    params.dropout = 0.4f;
    params.seed = 0xfeedbeefcafe1234ull;
    params.rng_stream = rng::stream_id(rng::kGatFeatureDropout, 3, 1, 2);
    dropout(x.cview(), Span<const int64_t>{key.data(), n}, params, out.view(), mask.view());
    const float scale = 1.0f / (1.0f - 0.4f);
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = rng::dropout_keep(params.seed, params.rng_stream, static_cast<uint64_t>(key[i]),
                                          rng::dropout_threshold(0.4f));
      ASSERT_EQ(mask(i, 0), keep ? scale : 0.0f) << i;
      ASSERT_EQ(out(i, 0), x(i, 0) * (keep ? scale : 0.0f)) << i;
    }
    dropout(x.cview(), Span<const int64_t>{key.data(), n}, params, x.view(), Matrix<float>{});  // in place
    EXPECT_EQ(x.data, out.data);
  }
}

TEST(CpuEpilogue, DropoutWordsOfEveryInstructionSet) {
  // Each vector form of the draw gives rng::bits's words in element order, for counter runs that are whole
  // vectors, have tails, and wrap the counter's low word (2^32 - 20 + 0..40).
  for (uint64_t first : {uint64_t(0), uint64_t(12345), (uint64_t(1) << 32) - 20, (uint64_t(7) << 32) + 3})
    for (int64_t counters : {1, 7, 8, 16, 17, 33, 40}) {
      std::vector<uint32_t> want(4 * counters);
      for (int64_t k = 0; k < counters; ++k)
        for (int j = 0; j < 4; ++j) want[4 * k + j] = rng::bits(99, 1234567, first + k).v[j];
      for (int isa : {0, 1, 2}) {
        std::vector<uint32_t> got(4 * counters, 0);
        if (!cpu::draw_dropout_words(99, 1234567, first, counters, isa, got.data())) continue;  // the CPU lacks it
        EXPECT_EQ(got, want) << "instruction set " << isa << " first " << first << " counters " << counters;
      }
    }
}

TEST(CpuEpilogue, DropoutThresholdIsExact) {
  // The keep probability (2^32 - t) / 2^32 is 1 - p exactly for these p (all >= 2^-9), and p = 0 keeps all.
  EXPECT_EQ(rng::dropout_threshold(0.0f), 0u);
  EXPECT_EQ(rng::dropout_threshold(0.5f), 0x80000000u);
  EXPECT_EQ(rng::dropout_threshold(0.25f), 0x40000000u);
  EXPECT_EQ(static_cast<double>(rng::dropout_threshold(0.1f)), static_cast<double>(0.1f) * 4294967296.0);
  EXPECT_EQ(rng::dropout_threshold(std::nextafter(1.0f, 0.0f)), 0xFFFFFF00u);  // 1 - 2^-24: the largest p
}

TEST(CpuEpilogue, DropoutRateAndScale) {
  // About a fraction p of elements is dropped and the kept ones are scaled by 1/(1-p).
  const int64_t rows = 200, width = 50;
  HostMatrix x(rows, width), out(rows, width), mask(rows, width);
  for (float& value : x.data) value = 1.0f;
  std::vector<int64_t> gid(rows);
  std::iota(gid.begin(), gid.end(), 0);
  EpilogueParams params;
  params.dropout = 0.3f;
  params.seed = 5;
  params.rng_stream = 9;
  dropout(x.cview(), Span<const int64_t>{gid.data(), rows}, params, out.view(), mask.view());
  int64_t dropped = 0;
  for (int64_t i = 0; i < rows * width; ++i) {
    if (out.data[i] == 0.0f)
      ++dropped;
    else
      ASSERT_FLOAT_EQ(out.data[i], 1.0f / 0.7f);
    ASSERT_EQ(out.data[i], mask.data[i]);
  }
  // 10000 Bernoulli(0.3) draws: standard deviation 46; 5 sigma.
  EXPECT_NEAR(double(dropped), 3000.0, 230.0);
}

TEST(CpuEpilogue, MasksDependOnGlobalIdsNotOnLocalPosition) {
  // Rows 10..19 of a 30-row matrix, processed alone with their global ids, draw the same masks: this is what
  // makes P ranks reproduce one.
  const int64_t rows = 30, width = 13;
  std::mt19937_64 gen(16);
  HostMatrix x(rows, width);
  x.randomize(gen);
  std::vector<int64_t> gid(rows);
  std::iota(gid.begin(), gid.end(), 500);
  EpilogueParams params;
  params.dropout = 0.5f;
  params.seed = 3;
  params.rng_stream = 4;
  HostMatrix whole(rows, width), whole_mask(rows, width);
  dropout(x.cview(), Span<const int64_t>{gid.data(), rows}, params, whole.view(), whole_mask.view());
  HostMatrix part(10, width), part_mask(10, width);
  dropout(x.cview().slice_rows(10, 20), Span<const int64_t>{gid.data() + 10, 10}, params, part.view(),
          part_mask.view());
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < width; ++c) {
      EXPECT_EQ(part(r, c), whole(r + 10, c));
      EXPECT_EQ(part_mask(r, c), whole_mask(r + 10, c));
    }
}

TEST(CpuEpilogue, DropoutInPlaceWithoutMaskAndOff) {
  std::mt19937_64 gen(17);
  HostMatrix x(12, 9);
  x.randomize(gen);
  const HostMatrix before = x;
  std::vector<int64_t> gid(12);
  std::iota(gid.begin(), gid.end(), 0);
  EpilogueParams params;  // dropout 0: identity, row_gid not needed
  dropout(x.cview(), Span<const int64_t>{}, params, x.view(), Matrix<float>{});
  EXPECT_EQ(x.data, before.data);
  params.dropout = 0.25f;
  HostMatrix reference(12, 9), mask(12, 9);
  dropout(before.cview(), Span<const int64_t>{gid.data(), 12}, params, reference.view(), mask.view());
  dropout(x.cview(), Span<const int64_t>{gid.data(), 12}, params, x.view(), Matrix<float>{});  // in place
  EXPECT_EQ(x.data, reference.data);
}

TEST(CpuEpilogue, ApplyMaskMultiplies) {
  std::mt19937_64 gen(18);
  HostMatrix grad(17, 11, 2), mask(17, 11, 1);
  grad.randomize(gen);
  mask.randomize(gen, 0.0f, 2.0f);
  const HostMatrix before = grad;
  apply_mask(grad.view(), mask.cview());
  for (int64_t r = 0; r < 17; ++r)
    for (int64_t c = 0; c < 11; ++c) ASSERT_EQ(grad(r, c), before(r, c) * mask(r, c));
  EXPECT_TRUE(grad.padding_intact());
}

// relu_dropout_backward reads the epilogue's output instead of a mask: bit for bit apply_mask with the mask
// bias_relu_dropout records, then bias_backward (more than one reduction block of rows, padded views, exact
// zeros before the relu, dropout on and off, any thread count; an empty grad_bias leaves the sums out).
TEST(CpuEpilogue, ReluDropoutBackwardEqualsMaskThenBiasBackward) {
  const int64_t rows = 2 * cpu::detail::kReductionBlockRows + 300, width = 37;
  std::mt19937_64 gen(19);
  std::vector<int64_t> gid(rows);
  std::iota(gid.begin(), gid.end(), 5000);
  for (float p : {0.0f, 0.3f, 0.5f}) {
    HostMatrix out(rows, width, 3), mask(rows, width, 1), grad(rows, width, 2);
    out.randomize(gen, -1.0f, 1.0f);
    for (int64_t r = 0; r < rows; r += 7) out(r, r % width) = 0.0f;  // pre-activation exactly 0: relu'(0) = 0
    grad.randomize(gen);
    std::vector<float> bias(width);
    for (float& b : bias) b = std::uniform_real_distribution<float>(-0.2f, 0.2f)(gen);
    EpilogueParams params{true, p, 77, 123};
    bias_relu_dropout(out.view(), Span<const float>{bias.data(), width}, Span<const int64_t>{gid.data(), rows},
                      params, mask.view());
    HostMatrix expected = grad;
    std::vector<float> expected_bias(width, 0.5f);
    apply_mask(expected.view(), mask.cview());
    bias_backward(expected.cview(), Span<float>{expected_bias.data(), width});
    for (int threads : {1, 3}) {
      omp_set_num_threads(threads);
      HostMatrix got = grad;
      std::vector<float> got_bias(width, 0.5f);
      relu_dropout_backward(got.view(), out.cview(), p, Span<float>{got_bias.data(), width});
      EXPECT_EQ(got.data, expected.data) << "p " << p << ", " << threads << " threads";
      EXPECT_EQ(got_bias, expected_bias) << "p " << p << ", " << threads << " threads";
      EXPECT_TRUE(got.padding_intact());
      HostMatrix no_sums = grad;
      relu_dropout_backward(no_sums.view(), out.cview(), p, Span<float>{});
      EXPECT_EQ(no_sums.data, expected.data);
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}
