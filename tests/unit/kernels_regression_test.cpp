// kernels::squared_error (temporal node regression) against a naive double reference: value, gradient, the
// value-only form, strided views, no rows, and the same result for any thread count.
#include <gtest/gtest.h>
#include <omp.h>

#include <random>

#include "kernels/cpu/ops.h"
#include "kernels_test_util.h"

namespace halogen::kernels::test {
namespace {

TEST(SquaredError, MatchesNaiveReferenceWithGradient) {
  std::mt19937_64 gen(7);
  for (int64_t rows : {0, 1, 5, 3000})
    for (int64_t cols : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      HostMatrix y(rows, cols, 2), target(rows, cols, 1), grad(rows, cols, 3);
      y.randomize(gen, -3.0f, 3.0f);
      target.randomize(gen, -3.0f, 3.0f);
      const double scale = 0.125;
      const double sum = cpu::squared_error(y.cview(), target.cview(), scale, grad.view());
      double expected = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const double e = static_cast<double>(y(r, c)) - static_cast<double>(target(r, c));
          expected += e * e;
          // Each gradient element is one double product rounded once to float: exact equality.
          EXPECT_EQ(grad(r, c), static_cast<float>(scale * e)) << r << "," << c;
        }
      // Blocked summation reorders the additions of up to 3000 terms of size <= 36: relative 1e-12 is far above
      // double rounding (~3000 * 1e-16) and far below any real error.
      EXPECT_NEAR(sum, expected, 1e-12 * std::max(1.0, expected));
      EXPECT_TRUE(grad.padding_intact());
    }
}

TEST(SquaredError, ValueOnlyLeavesNoGradientAndIgnoresThreads) {
  std::mt19937_64 gen(8);
  HostMatrix y(5000, 2), target(5000, 2);
  y.randomize(gen);
  target.randomize(gen);
  Matrix<float> none{nullptr, 0, 0, 0, Device::cpu};
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = cpu::squared_error(y.cview(), target.cview(), 1.0, none);
  omp_set_num_threads(std::max(2, threads));
  const double many = cpu::squared_error(y.cview(), target.cview(), 1.0, none);
  omp_set_num_threads(threads);
  EXPECT_EQ(one, many) << "fixed-block summation must not depend on the thread count";
  EXPECT_GT(one, 0.0);
}

}  // namespace
}  // namespace halogen::kernels::test
