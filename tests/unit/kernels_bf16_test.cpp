// The BF16 ops on the CPU (kernels/ops.h "BF16 storage"): rounding (ties to even, NaN kept, overflow to Inf,
// denormals kept) against hand-worked bit patterns; the conversion kernel against the scalar rule on random
// bit patterns; spmm_bf16 bitwise equal to the FP32 spmm of the widened rows (AVX2 and baseline); gemm_bf16
// against a double reference for every transpose combination, odd sizes, a long inner dimension (the k-split)
// and beta, on the AVX512-BF16 kernel (when the CPU has it) and on the forced FP32 fallback; BF16 row gather
// and scatter-add.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/bf16.h"
#include "kernels/cpu/ops.h"
#include "kernels/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using namespace halogen::kernels;
using namespace halogen::kernels::test;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// A BF16 matrix (rows, cols) with row stride `stride`.
struct HostBf16 {
  int64_t rows = 0, cols = 0, stride = 0;
  std::vector<Bf16> data;
  HostBf16(int64_t rows_, int64_t cols_, int64_t padding = 0)
      : rows(rows_),
        cols(cols_),
        stride(cols_ + padding),
        data(static_cast<size_t>(std::max<int64_t>(rows_ * (cols_ + padding), 1)), Bf16{0x7fc1}) {}
  Bf16& operator()(int64_t r, int64_t c) { return data[r * stride + c]; }
  float value(int64_t r, int64_t c) const { return to_float(data[r * stride + c]); }
  Matrix<Bf16> view() { return Matrix<Bf16>{data.data(), rows, cols, stride, Device::cpu}; }
  Matrix<const Bf16> cview() const {
    return Matrix<const Bf16>{data.data(), rows, cols, stride, Device::cpu};
  }
  void randomize(std::mt19937_64& gen) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) (*this)(r, c) = to_bf16(dist(gen));
  }
};

TEST(Bf16Rounding, HandWorkedBitPatterns) {
  struct Case {
    uint32_t in;
    uint16_t out;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1.0 exactly
      {0x3f808000u, 0x3f80},  // tie, lower neighbour even: down
      {0x3f818000u, 0x3f82},  // tie, lower neighbour odd: up to even
      {0x3f808001u, 0x3f81},  // just above the tie: up
      {0x3f807fffu, 0x3f80},  // just below the tie: down
      {0xbf818000u, 0xbf82},  // negative tie: magnitude rounds the same way
      {0x7f7fffffu, 0x7f80},  // largest float rounds to Inf
      {0x7f800000u, 0x7f80},  // Inf stays Inf
      {0xff800000u, 0xff80},  // -Inf
      {0x00010000u, 0x0001},  // a denormal stays (no flush to zero)
      {0x00000000u, 0x0000},  // +0
      {0x80000000u, 0x8000},  // -0
      {0x7f800001u, 0x7fc0},  // signalling NaN with a low payload: quiet NaN, not Inf
      {0xffc12345u, 0xffc1},  // quiet negative NaN keeps sign and top payload
  };
  for (const Case& c : cases) {
    EXPECT_EQ(to_bf16(from_bits(c.in)).bits, c.out) << std::hex << "input 0x" << c.in;
    // The kernel applies the same rule.
    float in = from_bits(c.in);
    Bf16 out{};
    convert_to_bf16(Matrix<const float>{&in, 1, 1, 1, Device::cpu}, Matrix<Bf16>{&out, 1, 1, 1, Device::cpu});
    EXPECT_EQ(out.bits, c.out) << std::hex << "kernel, input 0x" << c.in;
  }
  EXPECT_TRUE(std::isnan(round_to_bf16(from_bits(0x7f800001u))));
  EXPECT_EQ(round_to_bf16(3.0f), 3.0f);  // representable values are exact
}

TEST(Bf16Conversion, KernelMatchesScalarRuleOnRandomBitsAndWidensExactly) {
  std::mt19937_64 gen(7);
  const int64_t rows = 300, cols = 133;  // above the parallel threshold, odd width, strided
  HostMatrix x(rows, cols, 3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x(r, c) = from_bits(static_cast<uint32_t>(gen()));
  HostBf16 y(rows, cols, 5);
  convert_to_bf16(x.cview(), y.view());
  HostMatrix back(rows, cols, 2);
  convert_from_bf16(y.cview(), back.view());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      ASSERT_EQ(y(r, c).bits, to_bf16(x(r, c)).bits) << "at (" << r << ", " << c << ")";
      uint32_t widened;
      std::memcpy(&widened, &back(r, c), sizeof(widened));
      ASSERT_EQ(widened, static_cast<uint32_t>(y(r, c).bits) << 16);
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < y.stride; ++c)
      ASSERT_EQ(y.data[r * y.stride + c].bits, 0x7fc1) << "padding written";
  EXPECT_TRUE(back.padding_intact());
}

// scale_round_bf16 is scale_rows then convert_to_bf16, bit for bit (random bits: NaN, Inf, denormals included).
TEST(Bf16Conversion, ScaleRoundIsScaleRowsThenConvert) {
  std::mt19937_64 gen(11);
  const int64_t rows = 257, cols = 67;
  HostMatrix x(rows, cols, 3);
  std::vector<float> scale(rows);
  for (int64_t r = 0; r < rows; ++r) {
    scale[r] = r % 17 == 0 ? from_bits(static_cast<uint32_t>(gen())) : 0.01f + 0.001f * static_cast<float>(r);
    for (int64_t c = 0; c < cols; ++c) x(r, c) = from_bits(static_cast<uint32_t>(gen()));
  }
  const Span<const float> scales{scale.data(), rows, Device::cpu};
  HostBf16 fused(rows, cols, 5), two_pass(rows, cols, 5);
  scale_round_bf16(scales, x.cview(), fused.view());
  HostMatrix scaled = x;
  scale_rows(scales, scaled.view());
  convert_to_bf16(scaled.cview(), two_pass.view());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(fused(r, c).bits, two_pass(r, c).bits) << "at (" << r << ", " << c << ")";
}

// dropout_bf16 is convert_from_bf16 then dropout, bit for bit (the same decisions), with dropout on and off.
TEST(Bf16Conversion, DropoutOfBf16IsWidenThenDropout) {
  std::mt19937_64 gen(13);
  const int64_t rows = 301, cols = 133;  // odd width, more than one draw block per row
  HostMatrix values(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) values(r, c) = std::ldexp(static_cast<float>(gen() % 2001) - 1000.0f, -7);
  HostBf16 x(rows, cols, 3);
  convert_to_bf16(values.cview(), x.view());
  std::vector<int64_t> gid(rows);
  for (int64_t r = 0; r < rows; ++r) gid[r] = 5 * r + 2;
  const Span<const int64_t> gids{gid.data(), rows, Device::cpu};
  for (const float p : {0.0f, 0.5f}) {
    const EpilogueParams params{false, p, 21, 7};
    HostMatrix fused(rows, cols, 2), widened(rows, cols), two_pass(rows, cols, 2);
    dropout_bf16(x.cview(), gids, params, fused.view());
    convert_from_bf16(x.cview(), widened.view());
    dropout(widened.cview(), gids, params, two_pass.view(), Matrix<float>{});
    int64_t dropped = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(fused(r, c), two_pass(r, c)) << "p " << p << " at (" << r << ", " << c << ")";
        dropped += widened(r, c) != 0.0f && fused(r, c) == 0.0f;
      }
    EXPECT_EQ(dropped > rows * cols / 3, p > 0.0f) << dropped;
    EXPECT_TRUE(fused.padding_intact());
  }
}

// dropout_scale_round_bf16 is dropout_bf16 then scale_round_bf16 (with scales) or convert_to_bf16 (without),
// bit for bit, with dropout on and off; random bits, so NaN, Inf and denormals are rounded too.
TEST(Bf16Conversion, DropoutScaleRoundIsDropoutThenScaleRound) {
  std::mt19937_64 gen(17);
  const int64_t rows = 203, cols = 133;  // odd width, more than one draw block per row
  HostBf16 x(rows, cols, 3);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) x(r, c).bits = static_cast<uint16_t>(gen());
  std::vector<int64_t> gid(rows);
  std::vector<float> scale(rows);
  for (int64_t r = 0; r < rows; ++r) {
    gid[r] = 7 * r + 3;
    scale[r] = r % 19 == 0 ? from_bits(static_cast<uint32_t>(gen())) : 0.02f + 0.003f * static_cast<float>(r);
  }
  const Span<const int64_t> gids{gid.data(), rows, Device::cpu};
  for (const bool scaled : {true, false})
    for (const float p : {0.0f, 0.5f}) {
      const Span<const float> scales =
          scaled ? Span<const float>{scale.data(), rows, Device::cpu} : Span<const float>{};
      const EpilogueParams params{false, p, 23, 9};
      HostBf16 fused(rows, cols, 5), two_pass(rows, cols, 5);
      HostMatrix dropped(rows, cols);
      dropout_scale_round_bf16(x.cview(), gids, params, scales, fused.view());
      dropout_bf16(x.cview(), gids, params, dropped.view());
      if (scaled)
        scale_round_bf16(scales, dropped.cview(), two_pass.view());
      else
        convert_to_bf16(dropped.cview(), two_pass.view());
      int64_t zeros = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(fused(r, c).bits, two_pass(r, c).bits)
              << "scaled " << scaled << " p " << p << " at (" << r << ", " << c << ")";
          zeros += (fused(r, c).bits & 0x7fffu) == 0;
        }
      EXPECT_EQ(zeros > rows * cols / 3, p > 0.0f) << zeros;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = cols; c < fused.stride; ++c) ASSERT_EQ(fused(r, c).bits, 0x7fc1) << "padding written";
    }
}

// spmm_bf16 adds the same FP32 terms in the same order as spmm on the widened rows: bitwise equal.
TEST(Bf16Spmm, BitwiseEqualToFp32SpmmOfWidenedRows) {
  std::mt19937_64 gen(11);
  for (bool avx2 : {true, false}) {
    const bool old = cpu::set_spmm_avx2_allowed(avx2);
    for (int64_t width : {1, 3, 8, 16, 17, 64, 67, 130}) {
      for (int variant = 0; variant < 4; ++variant) {  // values, pattern, col+row scale, accumulate
        SCOPED_TRACE(testing::Message() << "avx2 " << avx2 << " width " << width << " variant " << variant);
        const HostCsr a = random_csr(gen, 90, 70, 5);
        HostBf16 x(70, width, variant == 3 ? 2 : 0);
        x.randomize(gen);
        HostMatrix widened(70, width);
        convert_from_bf16(x.cview(), widened.view());
        std::vector<float> row_scale(90), col_scale(70);
        for (float& s : row_scale) s = 0.5f + static_cast<float>(gen() % 100) / 100.0f;
        for (float& s : col_scale) s = 0.5f + static_cast<float>(gen() % 100) / 100.0f;
        CsrView view = a.view(variant == 0 || variant == 3);
        if (variant == 2) {
          view.row_scale = row_scale.data();
          view.col_scale = col_scale.data();
        }
        const bool accumulate = variant == 3;
        HostMatrix expected(90, width, 1), got(90, width, 1);
        expected.randomize(gen);
        got.data = expected.data;
        spmm(view, widened.cview(), expected.view(), accumulate);
        spmm_bf16(view, x.cview(), got.view(), accumulate);
        ASSERT_EQ(0,
                  std::memcmp(expected.data.data(), got.data.data(), expected.data.size() * sizeof(float)));
      }
    }
    cpu::set_spmm_avx2_allowed(old);
  }
}

void check_gemm(std::mt19937_64& gen, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha,
                float beta) {
  SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb
                                  << " beta " << beta << " kernel " << cpu::gemm_bf16_instruction_set());
  HostBf16 a(ta ? k : m, ta ? m : k, 1), b(tb ? n : k, tb ? k : n, 2);
  a.randomize(gen);
  b.randomize(gen);
  HostMatrix c(m, n, 1);
  c.randomize(gen);
  std::vector<double> expected(static_cast<size_t>(m * n)), magnitude(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, abs_sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const double term = static_cast<double>(ta ? a.value(kk, i) : a.value(i, kk)) *
                            static_cast<double>(tb ? b.value(j, kk) : b.value(kk, j));
        sum += term;
        abs_sum += std::fabs(term);
      }
      expected[i * n + j] = alpha * sum + beta * c(i, j);
      magnitude[i * n + j] = std::fabs(alpha) * abs_sum + std::fabs(beta * c(i, j));
    }
  gemm_bf16(a.cview(), ta, b.cview(), tb, c.view(), alpha, beta);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      // Each BF16 x BF16 product is exact in FP32; the k FP32 additions (any order, blocked or not) err by at
      // most k * 2^-24 * sum |terms| (Higham), plus the alpha/beta step; doubled for margin.
      const double tolerance = 2.0 * (k + 2) * 5.97e-8 * magnitude[i * n + j] + 1e-30;
      ASSERT_NEAR(c(i, j), expected[i * n + j], tolerance) << "at (" << i << ", " << j << ")";
    }
  EXPECT_TRUE(c.padding_intact());
}

void check_all_gemms(uint64_t seed) {
  std::mt19937_64 gen(seed);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_gemm(gen, 37, 19, 33, ta, tb, 1.0f, 0.0f);    // odd everything: tails of rows, columns and pairs
      check_gemm(gen, 130, 70, 128, ta, tb, 0.5f, 1.0f);  // several panels and column tiles, beta
      check_gemm(gen, 1, 1, 1, ta, tb, 1.0f, 0.0f);
    }
  check_gemm(gen, 700, 16, 129, false, false, 1.0f, 0.0f);   // H W: many rows over threads
  check_gemm(gen, 40, 17, 20001, true, false, 1.0f, 0.0f);   // H^T dZ: the k-split, odd last block
  check_gemm(gen, 40, 17, 20001, true, false, 2.0f, -1.0f);  // k-split with alpha and beta
  check_gemm(gen, 5, 7, 0, false, false, 1.0f, 0.5f);        // k == 0: c = beta c
}

TEST(Bf16Gemm, Avx512Bf16KernelMatchesDoubleReference) {
  if (std::string(cpu::gemm_bf16_instruction_set()) != "avx512bf16") GTEST_SKIP() << "no AVX512-BF16 here";
  const int old_threads = omp_get_max_threads();
  omp_set_num_threads(2);
  check_all_gemms(21);
  omp_set_num_threads(old_threads);
}

TEST(Bf16Gemm, Fp32FallbackMatchesDoubleReference) {
  const bool old = cpu::set_gemm_bf16_avx512_allowed(false);
  EXPECT_STREQ(cpu::gemm_bf16_instruction_set(), "fp32 blas (widened)");
  check_all_gemms(22);
  cpu::set_gemm_bf16_avx512_allowed(old);
}

TEST(Bf16Gemm, KSplitDoesNotDependOnThreadCount) {
  std::mt19937_64 gen(5);
  HostBf16 a(20001, 24), b(20001, 9);
  a.randomize(gen);
  b.randomize(gen);
  HostMatrix one(24, 9), two(24, 9);
  const int old_threads = omp_get_max_threads();
  omp_set_num_threads(1);
  gemm_bf16(a.cview(), true, b.cview(), false, one.view(), 1.0f, 0.0f);
  omp_set_num_threads(2);
  gemm_bf16(a.cview(), true, b.cview(), false, two.view(), 1.0f, 0.0f);
  omp_set_num_threads(old_threads);
  EXPECT_EQ(0, std::memcmp(one.data.data(), two.data.data(), one.data.size() * sizeof(float)));
}

TEST(Bf16Rows, GatherAndScatterAdd) {
  std::mt19937_64 gen(3);
  HostBf16 x(10, 5, 1);
  x.randomize(gen);
  const std::vector<int32_t> idx = {4, 0, 9, 4};
  HostBf16 packed(4, 5, 3);
  gather_rows_bf16(x.cview(), Span<const int32_t>{idx.data(), 4, Device::cpu}, packed.view());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(packed(i, c).bits, x(idx[i], c).bits);
  HostMatrix out(10, 5, 1);
  out.randomize(gen);
  HostMatrix expected = out;
  for (int64_t i = 0; i < 4; ++i)  // duplicates add in index order
    for (int64_t c = 0; c < 5; ++c) expected(idx[i], c) += packed.value(i, c);
  scatter_add_rows_bf16(packed.cview(), Span<const int32_t>{idx.data(), 4, Device::cpu}, out.view());
  EXPECT_EQ(0, std::memcmp(expected.data.data(), out.data.data(), out.data.size() * sizeof(float)));
}

}  // namespace
