// train::estimate_epoch (the time model of `halogen plan`): the phases it adds up follow the engine's GCN
// schedule, and its cache model and overlap behave as documented in train/epoch_estimate.h.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "train/epoch_estimate.h"

namespace halogen::train {
namespace {

// A profile with round numbers: 1 GB/s everywhere is 1 byte per ns, so expected times are byte counts.
DeviceProfile unit_profile() {
  DeviceProfile profile;
  profile.name = "unit";
  ComputeRates rates;
  rates.stream_gbs = 1;
  rates.spmm_widths = {8, 128};
  rates.spmm_gbs = {1, 1};
  rates.gemm_gflops = 1e9;  // GEMMs are bandwidth-bound here: max(flops / rate, bytes / stream)
  rates.dropout_gelems = 1;
  profile.rates = {rates};
  profile.link_gbs = 1;
  profile.link_latency_us = 0;
  return profile;
}

nn::ModelConfig gcn(int layers, int64_t hidden) {
  nn::ModelConfig config;
  config.layers = layers;
  config.hidden = hidden;
  config.dropout = 0.5f;
  return config;
}

nn::RankShape one_rank_shape() {
  nn::RankShape shape;
  shape.num_owned = 1000;
  shape.nnz = 10000;
  shape.num_features = 16;
  shape.num_classes = 4;
  return shape;
}

// one_rank_shape with a 10-row exchange with one peer (10 halo entries): far shorter than the owned product.
nn::RankShape small_halo_shape() {
  nn::RankShape shape = one_rank_shape();
  shape.num_halo = 10;
  shape.num_send = 10;
  return shape;
}
RankTraffic small_halo_traffic() {
  RankTraffic traffic;
  traffic.halo_entries = 10;
  traffic.peers = 1;
  return traffic;
}

TEST(EpochEstimate, SpmmBytesFollowTheLayerOrder) {
  // 2 layers 16 -> 32 -> 4: layer 0 aggregates first (width 16, no backward SpMM: its input has no
  // gradient), layer 1 transforms first (width 4, forward and backward). Entries = nnz + n self-loops.
  const nn::RankShape shape = one_rank_shape();
  const EpochEstimate e = estimate_epoch(gcn(2, 32), shape, RankTraffic{}, 1, unit_profile(), 1);
  const int64_t entries = 11000, rows = 1000;
  auto bytes = [&](int64_t width) { return 8 * (rows + 1) + 8 * entries + 4 * width * (entries + rows); };
  EXPECT_EQ(e.spmm_bytes, bytes(16) + 2 * bytes(4));
  EXPECT_DOUBLE_EQ(e.halo_ms, 0.0);  // one rank: no exchange
  EXPECT_DOUBLE_EQ(e.allreduce_ms, 0.0);
  EXPECT_NEAR(e.epoch_ms, e.spmm_ms + e.gemm_ms + e.elementwise_ms + e.optimizer_ms, 1e-9);
}

TEST(EpochEstimate, CachedColumnsRemoveGathers) {
  // Every entry in one column: a cache of one row of X holds it, so no gathered bytes remain.
  nn::RankShape shape = one_rank_shape();
  RankTraffic traffic;
  traffic.top_column_entries = top_column_curve(std::vector<int64_t>{10000});
  DeviceProfile profile = unit_profile();
  profile.cache_bytes = 4 * 128;  // one row of the widest product
  const EpochEstimate cached = estimate_epoch(gcn(2, 32), shape, traffic, 1, profile, 1);
  const EpochEstimate uncached = estimate_epoch(gcn(2, 32), shape, RankTraffic{}, 1, profile, 1);
  EXPECT_LT(cached.spmm_bytes, uncached.spmm_bytes);
  // The share (1 here) applies to every entry, the self-loops included: 11000 entries x the widths of the
  // three products.
  EXPECT_EQ(uncached.spmm_bytes - cached.spmm_bytes, 4 * 11000 * (16 + 2 * 4));
}

TEST(EpochEstimate, TopColumnCurve) {
  const std::vector<int64_t> curve = top_column_curve({1, 5, 2, 8});  // sorted: 8 5 2 1
  ASSERT_EQ(curve, (std::vector<int64_t>{8, 13, 16}));                // top 1, top 2, top 4 (= all)
  EXPECT_DOUBLE_EQ(cached_entry_share(curve, 1 << 20), 1.0);         // every column fits
  EXPECT_DOUBLE_EQ(cached_entry_share({}, 100), 0.0);                 // unknown: no hits
  EXPECT_DOUBLE_EQ(cached_entry_share(curve, 0.5), 0.0);              // not even one row
}

TEST(EpochEstimate, LruShareOfUniformColumnsIsTheCachedFraction) {
  // Che's approximation: with N equally used columns and C cached rows, a reference hits with probability C/N.
  const std::vector<int64_t> uniform = top_column_curve(std::vector<int64_t>(1 << 12, 16));
  for (double rows : {64.0, 512.0, 3000.0})
    EXPECT_NEAR(cached_entry_share(uniform, rows), rows / 4096.0, 1e-9) << rows;
}

TEST(EpochEstimate, LruShareOfSkewedColumnsLiesBetweenUniformAndOracle) {
  // Zipf-like use (column k used ~ 4096 / (k + 1) times): an LRU cache gains from the hubs (more than C/N)
  // but less than a cache that always holds the C most used rows (the curve itself), and more rows never
  // hit less.
  std::vector<int64_t> counts;
  for (int k = 0; k < (1 << 12); ++k) counts.push_back(4096 / (k + 1) + 1);
  const std::vector<int64_t> curve = top_column_curve(counts);
  double previous = 0;
  for (int log_rows = 2; log_rows < 12; ++log_rows) {
    const double rows = std::ldexp(1.0, log_rows);
    const double share = cached_entry_share(curve, rows);
    const double oracle = static_cast<double>(curve[log_rows]) / static_cast<double>(curve.back());
    EXPECT_GT(share, rows / 4096.0) << rows;
    EXPECT_LT(share, oracle) << rows;
    EXPECT_GT(share, previous) << rows;
    previous = share;
  }
}

TEST(EpochEstimate, SpmmRateIsInterpolatedInWidthAndOperandSize) {
  ComputeRates rates;
  rates.spmm_widths = {8, 32};
  rates.spmm_gbs = {2, 4};
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 16, 1), 3.0);  // halfway in log2(width); no sizes: any size
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 4, 1 << 30), 2.0);
  rates.spmm_rows = {1 << 10, 1 << 14};
  rates.spmm_gbs = {20, 40, 2, 4};  // [size][width]: the small operand runs 10x faster
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 8, 1 << 10), 20.0);
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 32, 1 << 14), 4.0);
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 16, 1 << 12), (30.0 + 3.0) / 2);  // halfway in both
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 8, 1 << 20), 2.0);                // clamped at the largest size
  EXPECT_DOUBLE_EQ(spmm_rate_at(rates, 64, 16), 40.0);                   // and at the smallest, widest
}

TEST(EpochEstimate, SmallerOperandUsesTheFasterRate) {
  // The same shape planned with a profile that is 10x faster at 1000 rows of X than at 10^6: the SpMM time
  // follows the rate measured nearest the rank's X (its owned + halo rows).
  DeviceProfile profile = unit_profile();
  profile.rates[0].spmm_rows = {1000, 1000000};
  profile.rates[0].spmm_gbs = {10, 10, 1, 1};
  const EpochEstimate fast = estimate_epoch(gcn(2, 32), one_rank_shape(), RankTraffic{}, 1, profile, 1);
  const EpochEstimate slow = estimate_epoch(gcn(2, 32), one_rank_shape(), RankTraffic{}, 1, unit_profile(), 1);
  EXPECT_EQ(fast.spmm_bytes, slow.spmm_bytes);
  EXPECT_NEAR(fast.spmm_ms * 10, slow.spmm_ms, 1e-9);
}

TEST(EpochEstimate, OverlapHidesAnExchangeShorterThanTheOwnedProduct) {
  const nn::RankShape shape = small_halo_shape();
  const RankTraffic traffic = small_halo_traffic();
  DeviceProfile profile = unit_profile();
  const EpochEstimate overlapped = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_GT(overlapped.halo_ms, 0.0);
  EXPECT_DOUBLE_EQ(overlapped.halo_exposed_ms, 0.0);  // 10 rows per exchange vs a 1000-row product
  profile.overlap = false;
  const EpochEstimate serial = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_DOUBLE_EQ(serial.halo_exposed_ms, serial.halo_ms);
  EXPECT_GT(serial.epoch_ms, overlapped.epoch_ms);
}

TEST(EpochEstimate, OverlapShareAndExchangeBandwidthPriceTheHalo) {
  // A 10-row exchange against a 1000-row owned product: with overlap_share 1 all of it hides, with 0.25 three
  // quarters stay exposed, with 0 all of it; exchange_gbs (not link_gbs) moves the halo.
  const nn::RankShape shape = small_halo_shape();
  const RankTraffic traffic = small_halo_traffic();
  DeviceProfile profile = unit_profile();
  const EpochEstimate full = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_DOUBLE_EQ(full.halo_exposed_ms, 0.0);
  profile.overlap_share = 0.25;
  const EpochEstimate quarter = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_NEAR(quarter.halo_exposed_ms, 0.75 * quarter.halo_ms, 1e-12);
  profile.overlap_share = 0.0;
  const EpochEstimate none = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_DOUBLE_EQ(none.halo_exposed_ms, none.halo_ms);
  profile.exchange_gbs = 2;  // twice the link: the wire time halves, packing and latency stay
  const EpochEstimate faster = estimate_epoch(gcn(2, 32), shape, traffic, 2, profile, 1);
  EXPECT_EQ(faster.halo_bytes, none.halo_bytes);
  const double wire_ms = static_cast<double>(none.halo_bytes) / 1e6;  // at 1 GB/s
  EXPECT_NEAR(none.halo_ms - faster.halo_ms, wire_ms / 2, 1e-9);
  EXPECT_DOUBLE_EQ(faster.allreduce_ms, none.allreduce_ms);  // the allreduce keeps link_gbs
}

TEST(EpochEstimate, OnlyGcnIsModelled) {
  nn::ModelConfig config = gcn(2, 32);
  config.kind = nn::ConvKind::sage;
  EXPECT_THROW(estimate_epoch(config, one_rank_shape(), RankTraffic{}, 1, unit_profile(), 1), UserError);
}

TEST(EpochEstimate, ManyRanksNeedALink) {
  DeviceProfile profile = unit_profile();
  profile.link_gbs = 0;
  EXPECT_THROW(estimate_epoch(gcn(2, 32), one_rank_shape(), RankTraffic{}, 2, profile, 1), UserError);
}

}  // namespace
}  // namespace halogen::train
