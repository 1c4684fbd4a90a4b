// CPU row packing (gather, scatter-add with duplicate indices) and flat helpers (fill, axpy, sum_squares).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <random>

#include "kernels/cpu/ops.h"
#include "kernels/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using namespace halogen::kernels;
using namespace halogen::kernels::test;

TEST(CpuGatherRows, CopiesIndexedRows) {
  std::mt19937_64 gen(31);
  for (int64_t width : {1, 6, 16, 35}) {
    HostMatrix x(20, width, 2), out(9, width, 1);
    x.randomize(gen);
    std::vector<int32_t> idx = {19, 0, 5, 5, 7, 0, 12, 3, 19};
    gather_rows(x.cview(), Span<const int32_t>{idx.data(), 9}, out.view());
    for (int64_t i = 0; i < 9; ++i)
      for (int64_t c = 0; c < width; ++c) ASSERT_EQ(out(i, c), x(idx[i], c));
    EXPECT_TRUE(out.padding_intact());
  }
  HostMatrix x(3, 4), none(0, 4);  // nothing to send
  gather_rows(x.cview(), Span<const int32_t>{}, none.view());
}

TEST(CpuScatterAddRows, DuplicatesAccumulateInOrder) {
  std::mt19937_64 gen(32);
  for (int64_t width : {1, 5, 16, 33}) {
    const int64_t n = 11, m = 40;
    HostMatrix x(m, width, 3), out(n, width, 2);
    x.randomize(gen);
    out.randomize(gen);
    std::vector<int32_t> idx(m);
    for (auto& i : idx) i = std::uniform_int_distribution<int32_t>(0, 5)(gen);  // rows 6..10 never hit
    idx[0] = 10;
    idx[1] = 10;
    HostMatrix expected = out;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < width; ++c) expected(idx[i], c) += x(i, c);  // serial, in index order
    scatter_add_rows(x.cview(), Span<const int32_t>{idx.data(), m}, out.view());
    EXPECT_EQ(out.data, expected.data) << "width " << width;  // same order of float additions: bitwise
  }
}

TEST(CpuScatterAddRows, BitwiseIdenticalForAnyThreadCount) {
  std::mt19937_64 gen(33);
  const int64_t n = 500, m = 3000, width = 20;
  HostMatrix x(m, width);
  x.randomize(gen);
  std::vector<int32_t> idx(m);
  for (auto& i : idx) i = std::uniform_int_distribution<int32_t>(0, n - 1)(gen);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3, 8}) {
    omp_set_num_threads(threads);
    HostMatrix out(n, width);
    for (float& value : out.data) value = 0.0f;
    scatter_add_rows(x.cview(), Span<const int32_t>{idx.data(), m}, out.view());
    results.push_back(out.data);
  }
  omp_set_num_threads(saved);
  for (size_t i = 1; i < results.size(); ++i) EXPECT_EQ(results[0], results[i]);
}

TEST(CpuElementwise, FillAxpy) {
  std::vector<float> x(1000), y(1000);
  fill(Span<float>{x.data(), 1000}, 2.5f);
  for (float value : x) ASSERT_EQ(value, 2.5f);
  fill(Span<float>{y.data(), 1000}, -1.0f);
  for (int i = 0; i < 1000; ++i) x[i] = float(i);
  axpy(0.5f, Span<const float>{x.data(), 1000}, Span<float>{y.data(), 1000});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y[i], -1.0f + 0.5f * float(i));
  fill(Span<float>{}, 1.0f);  // empty spans are fine
  axpy(1.0f, Span<const float>{}, Span<float>{});
}

TEST(CpuElementwise, SumSquaresAndNonFinite) {
  std::mt19937_64 gen(34);
  std::vector<float> x(100000);
  double expected = 0.0;
  for (auto& value : x) {
    value = std::uniform_real_distribution<float>(-2, 2)(gen);
    expected += double(value) * value;
  }
  EXPECT_NEAR(sum_squares(Span<const float>{x.data(), int64_t(x.size())}), expected, 1e-9 * expected);
  EXPECT_EQ(sum_squares(Span<const float>{}), 0.0);
  // Large finite values do not overflow (squares in double).
  std::vector<float> big = {3e38f, -3e38f};
  EXPECT_TRUE(std::isfinite(sum_squares(Span<const float>{big.data(), 2})));
  x[777] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(sum_squares(Span<const float>{x.data(), int64_t(x.size())})));
  x[777] = std::nanf("");
  EXPECT_TRUE(std::isnan(sum_squares(Span<const float>{x.data(), int64_t(x.size())})));
}

TEST(CpuKernelsDeathTest, RejectDeviceViews) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float data[4] = {0, 0, 0, 0};
  EXPECT_DEATH(cpu::fill(Span<float>{data, 4, Device::cuda}, 1.0f), "host memory");
  EXPECT_DEATH(cpu::apply_mask(Matrix<float>{data, 2, 2, 2, Device::cpu},
                               Matrix<const float>{data, 2, 2, 2, Device::cuda}),
               "host memory");
}
