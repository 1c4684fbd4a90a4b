// nn::PhaseClock on the CPU (wall clock): intervals add up per phase, phases are independent (they may
// overlap), take() returns and resets, and PhaseTimes[phase] names the right field. The CUDA clock is exercised
// by gpu_train_parity_test (phase times present on a GPU run).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kernels/device.h"
#include "nn/profile.h"

using namespace halogen;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(PhaseClock, WallClockSumsIntervalsPerPhaseAndResetsOnTake) {
  std::unique_ptr<nn::PhaseClock> clock = nn::make_phase_clock(Device::cpu);
  clock->begin(nn::Phase::halo_total, nullptr);  // spans the two spmm intervals below
  for (int i = 0; i < 2; ++i) {
    nn::PhaseScope scope(*clock, nn::Phase::spmm, nullptr);
    sleep_ms(20);
  }
  clock->end(nn::Phase::halo_total, nullptr);
  const nn::PhaseTimes first = clock->take();
  // Sleeps last at least as long as asked; the upper bounds only guard against a wrong unit (s vs ms), so
  // they are loose enough for a loaded 2-core CI machine.
  EXPECT_GE(first.spmm_ms, 40.0);
  EXPECT_LT(first.spmm_ms, 4000.0);
  EXPECT_GE(first.halo_total_ms, first.spmm_ms);
  EXPECT_EQ(first.gemm_ms, 0.0);
  EXPECT_EQ(first.allreduce_ms, 0.0);
  const nn::PhaseTimes second = clock->take();
  EXPECT_EQ(second.spmm_ms, 0.0);
  EXPECT_EQ(second.halo_total_ms, 0.0);
}

TEST(PhaseClock, PhaseTimesIndexNamesEachField) {
  nn::PhaseTimes times;
  for (int p = 0; p < nn::kNumPhases; ++p) times[static_cast<nn::Phase>(p)] = p + 1;
  EXPECT_EQ(times.spmm_ms, 1);
  EXPECT_EQ(times.gemm_ms, 2);
  EXPECT_EQ(times.elementwise_ms, 3);
  EXPECT_EQ(times.halo_exposed_ms, 4);
  EXPECT_EQ(times.halo_total_ms, 5);
  EXPECT_EQ(times.allreduce_ms, 6);
  EXPECT_EQ(times.optimizer_ms, 7);
  EXPECT_EQ(times.allreduce_exposed_ms, 8);
}

// Without a usable GPU (a build without the CUDA backend, or this machine has no GPU) the CUDA clock is a
// UserError, not a crash in the first event call.
TEST(PhaseClock, CudaClockWithoutAGpuIsAUserError) {
  if (kernels::device::usable_device_count() > 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_THROW(nn::make_phase_clock(Device::cuda), UserError);
}

}  // namespace
