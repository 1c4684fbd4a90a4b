// kernels::work_count (kernels/ops.h): the bytes and flops the products add, exactly by the documented model,
// and nn::PhaseClock handing the spmm phase's bytes and the gemm phase's flops to take() (the roofline of
// `bench epoch`); work outside those phases is not counted, and take() starts over.
#include <gtest/gtest.h>

#include <random>

#include "kernels/ops.h"
#include "kernels_test_util.h"
#include "nn/profile.h"

using namespace halogen;
using kernels::test::HostCsr;
using kernels::test::HostMatrix;

namespace {

struct Delta {
  double bytes, flops;
};

template <typename Step>
Delta work_of(Step step) {
  const kernels::WorkCount before = kernels::work_count();
  step();
  return {kernels::work_count().bytes - before.bytes, kernels::work_count().flops - before.flops};
}

}  // namespace

TEST(WorkCount, SpmmAndGemmFollowTheModel) {
  std::mt19937_64 gen(3);
  const HostCsr a = kernels::test::random_csr(gen, 50, 40, 4);
  const double nnz = static_cast<double>(a.indices.size());
  HostMatrix x(40, 16), out(50, 16);
  x.randomize(gen);
  Delta d = work_of([&] { kernels::spmm(a.view(), x.cview(), out.view(), false); });
  EXPECT_DOUBLE_EQ(d.bytes, 8.0 * 51 + (4 + 4 + 4 * 16) * nnz + 4.0 * 50 * 16);
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * nnz * 16);
  // Pattern-only and accumulating: no values, the output read and written.
  d = work_of([&] { kernels::spmm(a.view(/*with_values=*/false), x.cview(), out.view(), true); });
  EXPECT_DOUBLE_EQ(d.bytes, 8.0 * 51 + (4 + 4 * 16) * nnz + 8.0 * 50 * 16);

  HostMatrix p(30, 20), q(20, 10), c(30, 10);
  p.randomize(gen);
  q.randomize(gen);
  d = work_of([&] { kernels::gemm(p.cview(), false, q.cview(), false, c.view(), 1.0f, 0.0f); });
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * 30 * 10 * 20);
  EXPECT_DOUBLE_EQ(d.bytes, 4.0 * (30 * 20 + 20 * 10 + 30 * 10));
  HostMatrix g(20, 10);  // c^T-shaped: p^T (20 x 30) times c (30 x 10), accumulated
  d = work_of([&] { kernels::gemm(p.cview(), true, c.cview(), false, g.view(), 1.0f, 1.0f); });
  EXPECT_DOUBLE_EQ(d.flops, 2.0 * 20 * 10 * 30);
  EXPECT_DOUBLE_EQ(d.bytes, 4.0 * (20 * 30 + 30 * 10 + 2 * 20 * 10));
  // An op that is not a product counts nothing.
  d = work_of([&] { kernels::fill(Span<float>{c.data.data(), 300, Device::cpu}, 0.0f); });
  EXPECT_EQ(d.bytes, 0.0);
  EXPECT_EQ(d.flops, 0.0);
}

TEST(WorkCount, PhaseClockTakesThePhasesWork) {
  std::mt19937_64 gen(4);
  const HostCsr a = kernels::test::random_csr(gen, 30, 30, 3);
  HostMatrix x(30, 8), out(30, 8), w(8, 4), z(30, 4);
  x.randomize(gen);
  w.randomize(gen);
  std::unique_ptr<nn::PhaseClock> clock = nn::make_phase_clock(Device::cpu);
  const Delta spmm = work_of([&] {
    nn::PhaseScope scope(*clock, nn::Phase::spmm, nullptr);
    kernels::spmm(a.view(), x.cview(), out.view(), false);
  });
  const Delta gemm = work_of([&] {
    nn::PhaseScope scope(*clock, nn::Phase::gemm, nullptr);
    kernels::gemm(out.cview(), false, w.cview(), false, z.view(), 1.0f, 0.0f);
  });
  kernels::spmm(a.view(), x.cview(), out.view(), false);  // outside any phase: not the clock's
  {
    nn::PhaseScope scope(*clock, nn::Phase::elementwise, nullptr);
    kernels::gemm(out.cview(), false, w.cview(), false, z.view(), 1.0f, 0.0f);  // another phase: not counted
  }
  const nn::PhaseTimes t = clock->take();
  EXPECT_DOUBLE_EQ(t.spmm_bytes, spmm.bytes);
  EXPECT_DOUBLE_EQ(t.gemm_flops, gemm.flops);
  EXPECT_GT(t.spmm_bytes, 0.0);
  EXPECT_DOUBLE_EQ(gemm.flops, 2.0 * 30 * 4 * 8);
  const nn::PhaseTimes again = clock->take();
  EXPECT_EQ(again.spmm_bytes, 0.0);
  EXPECT_EQ(again.gemm_flops, 0.0);
}
