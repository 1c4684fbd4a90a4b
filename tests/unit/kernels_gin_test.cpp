// GIN's learnable-epsilon ops (kernels/cpu/gin.cpp) against naive double references, on strided views (the
// padding sentinel catches a kernel touching the gap between rows), with empty shapes, and thread-count
// independence of dot_add's reduction.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using halogen::kernels::test::HostMatrix;

namespace {

HostMatrix random_matrix(std::mt19937_64& gen, int64_t rows, int64_t cols) {
  HostMatrix m(rows, cols, /*padding=*/3);
  m.randomize(gen, -2.0f, 2.0f);
  return m;
}

}  // namespace

TEST(CpuGin, OnePlusEpsAddMatchesReferenceAndKeepsPadding) {
  std::mt19937_64 gen(1);
  for (float eps : {0.0f, 0.3f, -1.5f}) {
    HostMatrix x = random_matrix(gen, 2500, 17),
               out = random_matrix(gen, 2500, 17);  // > 2^15 elements: OpenMP
    const HostMatrix before = out;
    kernels::cpu::one_plus_eps_add(x.cview(), Span<const float>{&eps, 1, Device::cpu}, out.view());
    int64_t wrong = 0;
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t c = 0; c < x.cols; ++c)
        // One float multiply and one add per element, as the reference: exact equality.
        wrong += out(r, c) != before(r, c) + (1.0f + eps) * x(r, c);
    EXPECT_EQ(wrong, 0) << "eps " << eps;
    EXPECT_TRUE(out.padding_intact());
  }
}

TEST(CpuGin, DotAddAccumulatesTheInnerProduct) {
  std::mt19937_64 gen(2);
  HostMatrix a = random_matrix(gen, 3001, 13), b = random_matrix(gen, 3001, 13);
  double reference = 0;
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t c = 0; c < a.cols; ++c)
      reference += static_cast<double>(a(r, c)) * static_cast<double>(b(r, c));
  float result = 0.75f;
  kernels::cpu::dot_add(a.cview(), b.cview(), Span<float>{&result, 1, Device::cpu});
  // Summed in double, rounded to float once, added to 0.75 in float: two float roundings of a value ~|ref|.
  EXPECT_NEAR(result, 0.75 + reference, 2 * 6e-8 * (std::abs(reference) + 1.0));
  // Fixed row blocks: the same bits for any thread count.
  float again = 0.75f;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  kernels::cpu::dot_add(a.cview(), b.cview(), Span<float>{&again, 1, Device::cpu});
  omp_set_num_threads(threads);
  EXPECT_EQ(again, result);
}

TEST(CpuGin, EmptyShapesChangeNothing) {
  float eps = 0.5f, result = 2.0f;
  HostMatrix empty(0, 4), out(0, 4);
  kernels::cpu::one_plus_eps_add(empty.cview(), Span<const float>{&eps, 1, Device::cpu}, out.view());
  kernels::cpu::dot_add(empty.cview(), empty.cview(), Span<float>{&result, 1, Device::cpu});
  EXPECT_EQ(result, 2.0f);
}
