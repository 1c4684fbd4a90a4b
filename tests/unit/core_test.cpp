// Core runtime: counter-based RNG, buffers, formatting, fatal errors.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/buffer.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/runtime.h"

using namespace halogen;

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST(Philox, MatchesRandom123KnownAnswers) {
  rng::Philox4 zero = rng::philox4x32(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  rng::Philox4 ones = rng::philox4x32(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  rng::Philox4 pi = rng::philox4x32(0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

TEST(Philox, DependsOnWhatNotWho) {
  // Same (seed, stream, index) -> same number, whatever else was drawn before.
  const uint64_t stream = rng::stream_id(rng::kDropout, 3, 1);
  const float a = rng::uniform(42, stream, 123456789);
  for (int i = 0; i < 100; ++i) (void)rng::uniform(7, 8, i);
  EXPECT_EQ(a, rng::uniform(42, stream, 123456789));
  // Different streams, seeds or indices give different numbers.
  EXPECT_NE(a, rng::uniform(43, stream, 123456789));
  EXPECT_NE(a, rng::uniform(42, rng::stream_id(rng::kDropout, 3, 2), 123456789));
  EXPECT_NE(a, rng::uniform(42, stream, 123456790));
  EXPECT_NE(rng::stream_id(rng::kDropout, 1, 2), rng::stream_id(rng::kDropout, 2, 1));
}

TEST(Philox, DropoutWordsAreTheFourWordsOfOneCall) {
  // Element i takes word i mod 4 of the call for counter i / 4 (the selects pick each of the four words), and
  // is kept when that word is >= the threshold.
  const uint64_t stream = rng::stream_id(rng::kDropout, 2, 1);
  for (uint64_t counter : {uint64_t(0), uint64_t(977), (uint64_t(1) << 32) + 5}) {
    const rng::Philox4 r = rng::bits(11, stream, counter);
    for (uint64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(rng::dropout_word(11, stream, 4 * counter + j), r.v[j]);
      EXPECT_EQ(rng::dropout_keep(11, stream, 4 * counter + j, r.v[j]), true);
      if (r.v[j] != 0xFFFFFFFFu) {
        EXPECT_EQ(rng::dropout_keep(11, stream, 4 * counter + j, r.v[j] + 1), false);
      }
    }
  }
}

TEST(Philox, UniformAndNormalMoments) {
  // 2^16 draws: the standard error of the mean is 0.29/256 ~ 0.0011 (uniform) and 1/256 ~ 0.004 (normal);
  // the tolerances are about 5 standard errors.
  const int n = 1 << 16;
  double sum = 0, sum_sq = 0, normal_sum = 0, normal_sq = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    const float u = rng::uniform(1, 2, i);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += u * u;
    const float z = rng::normal(1, 3, i);
    ASSERT_TRUE(std::isfinite(z));
    normal_sum += z;
    normal_sq += z * z;
  }
  EXPECT_GE(lo, 0.0f);
  EXPECT_LT(hi, 1.0f);
  EXPECT_NEAR(sum / n, 0.5, 0.006);
  EXPECT_NEAR(sum_sq / n - 0.25, 1.0 / 12, 0.006);
  EXPECT_NEAR(normal_sum / n, 0.0, 0.02);
  EXPECT_NEAR(normal_sq / n, 1.0, 0.03);
}

TEST(Buffer, MoveOnlyOwnershipAndViews) {
  Tensor a(3, 4, Device::cpu);
  EXPECT_EQ(a.size(), 12);
  a.zero();
  a.matrix()(2, 3) = 5.0f;
  EXPECT_EQ(a[11], 5.0f);
  const int64_t in_use = detail::bytes_in_use(Device::cpu);
  Tensor b = std::move(a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(b[11], 5.0f);
  EXPECT_EQ(detail::bytes_in_use(Device::cpu), in_use);  // a move allocates nothing
  Matrix<float> rows = b.matrix().slice_rows(1, 3);
  EXPECT_EQ(rows.rows, 2);
  EXPECT_EQ(rows(1, 3), 5.0f);
  Tensor c = b.clone(Device::cpu);
  EXPECT_EQ(c[11], 5.0f);
  EXPECT_NE(c.data(), b.data());
  b.reset();
  EXPECT_EQ(detail::bytes_in_use(Device::cpu), in_use - 48 + 48);  // b released, c still held
  static_assert(!std::is_copy_constructible_v<Tensor>, "buffers must be move-only");
}

TEST(Buffer, DeviceMemoryWithoutBackendIsAUserError) {
  if (device_memory_available()) GTEST_SKIP() << "a CUDA backend is installed in this process";
  EXPECT_THROW(Tensor(4, 4, Device::cuda), UserError);
}

TEST(Errors, FormatAndUserCheck) {
  EXPECT_EQ(strformat("%s:%d", "a", 7), "a:7");
  try {
    HALOGEN_USER_CHECK(1 + 1 == 3, "g.h5: /csr/indptr: entry %d decreases", 5);
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "g.h5: /csr/indptr: entry 5 decreases");
  }
}

TEST(ErrorsDeathTest, FatalPrintsRankHostFileLineAndExits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fatal("kernels/x.cu", 42, "boom"), ::testing::ExitedWithCode(3),
              "^\\[rank 0/1 [^]]+\\] kernels/x.cu:42 boom");
  EXPECT_EXIT(HALOGEN_ASSERT(1 == 2, "n=%d", 9), ::testing::ExitedWithCode(3), "assertion failed: 1 == 2 n=9");
}
