#include "train/epoch_estimate.h"

#include "nn/model_registry.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/check.h"
#include "core/error.h"
#include "nn/model_registry.h"

namespace halogen::train {

const ComputeRates& DeviceProfile::rates_for(int threads) const {
  HALOGEN_ASSERT(!rates.empty(), "a device profile without rates");
  const ComputeRates* best = &rates.front();
  for (const ComputeRates& r : rates)
    if (r.threads <= threads) best = &r;
  return *best;
}

namespace {

// Linear interpolation of y over log2(x) at `at`, clamped at the ends; `x` ascending, y[i] at x[i].
double log2_interpolate(const std::vector<int64_t>& x, const double* y, int64_t at) {
  if (x.size() == 1 || at <= x.front()) return y[0];
  if (at >= x.back()) return y[x.size() - 1];
  size_t i = 1;
  while (x[i] < at) ++i;
  const double x0 = std::log2(static_cast<double>(x[i - 1])), x1 = std::log2(static_cast<double>(x[i]));
  const double t = (std::log2(static_cast<double>(at)) - x0) / (x1 - x0);
  return y[i - 1] + t * (y[i] - y[i - 1]);
}

}  // namespace

double spmm_rate_at(const ComputeRates& rates, int64_t width, int64_t x_rows) {
  const size_t widths = rates.spmm_widths.size(), sizes = std::max<size_t>(1, rates.spmm_rows.size());
  HALOGEN_ASSERT(widths > 0 && rates.spmm_gbs.size() == widths * sizes);
  if (sizes == 1) return log2_interpolate(rates.spmm_widths, rates.spmm_gbs.data(), width);
  std::vector<double> at_width(sizes);
  for (size_t j = 0; j < sizes; ++j)
    at_width[j] = log2_interpolate(rates.spmm_widths, rates.spmm_gbs.data() + j * widths, width);
  return log2_interpolate(rates.spmm_rows, at_width.data(), x_rows);
}

double cached_entry_share(const std::vector<int64_t>& top, double cached_rows) {
  if (top.empty() || top.back() <= 0 || cached_rows < 1) return 0.0;
  // Buckets of the curve: [0] the most used column, [i] the 2^(i-1) next ones, each used (top[i] -
  // top[i-1]) / 2^(i-1) times (the last bucket's column count is taken as 2^(i-1) too).
  const double total = static_cast<double>(top.back());
  std::vector<double> columns(top.size()), probability(top.size());
  double all_columns = 0;
  for (size_t i = 0; i < top.size(); ++i) {
    columns[i] = i == 0 ? 1.0 : std::ldexp(1.0, static_cast<int>(i) - 1);
    const double entries = static_cast<double>(top[i] - (i == 0 ? 0 : top[i - 1]));
    probability[i] = entries / columns[i] / total;
    all_columns += columns[i];
  }
  if (cached_rows >= all_columns) return 1.0;
  // Che's approximation of an LRU cache under independent references: a row used with probability q per
  // reference is in the cache with probability 1 - exp(-q T), T (in references) such that the expected
  // occupancy is the cache's rows; the hit share weights that by q.
  auto occupancy = [&](double t) {
    double rows = 0;
    for (size_t i = 0; i < top.size(); ++i) rows += columns[i] * -std::expm1(-probability[i] * t);
    return rows;
  };
  double low = 0, high = 1;
  while (occupancy(high) < cached_rows) high *= 2;
  for (int iteration = 0; iteration < 100; ++iteration) {
    const double mid = 0.5 * (low + high);
    (occupancy(mid) < cached_rows ? low : high) = mid;
  }
  double share = 0;
  for (size_t i = 0; i < top.size(); ++i)
    share += columns[i] * probability[i] * -std::expm1(-probability[i] * high);
  return std::min(1.0, share);
}

std::vector<int64_t> top_column_curve(std::vector<int64_t> counts) {
  std::sort(counts.begin(), counts.end(), std::greater<int64_t>());
  std::vector<int64_t> curve;
  int64_t covered = 0;
  size_t next = 1;
  for (size_t k = 0; k < counts.size(); ++k) {
    covered += counts[k];
    if (k + 1 == next) {
      curve.push_back(covered);
      next *= 2;
    }
  }
  if (!counts.empty() && curve.size() < 64 && (curve.empty() || curve.back() != covered))
    curve.push_back(covered);
  return curve;
}

double spmm_model_bytes(int64_t rows, int64_t entries, int64_t width, double hit, double element_bytes) {
  // The gathered rows in `element_bytes` per element (BF16: 2), the output rows in FP32.
  return 8.0 * static_cast<double>(rows + 1) + 8.0 * static_cast<double>(entries) +
         static_cast<double>(width) * (element_bytes * static_cast<double>(entries) * (1.0 - hit) +
                                       4.0 * static_cast<double>(rows));
}

double spmm_sample_gbs(const SpmmSample& sample) {
  return spmm_model_bytes(sample.rows, sample.entries, sample.width, 0.0) / sample.seconds / 1e9;
}

namespace {

constexpr double kFloat = 4.0;

// Accumulates the phases of one epoch; every cost function returns milliseconds.
class EpochCost {
 public:
  // `element_bytes`: of the matrices multiplied by the adjacency and exchanged (4; --precision bf16: 2).
  EpochCost(const nn::RankShape& shape, const RankTraffic& traffic, const DeviceProfile& profile,
            const ComputeRates& rates, bool self_loops, int ranks_sharing_cache, double element_bytes = kFloat)
      : shape_(shape), traffic_(traffic), profile_(profile), rates_(rates), element_(element_bytes) {
    cache_bytes_ = static_cast<double>(profile.cache_bytes) / std::max(1, ranks_sharing_cache);
    const int64_t entries = shape.nnz + (self_loops ? shape.num_owned : 0);
    halo_entries_ = std::min(traffic.halo_entries, entries);
    own_entries_ = entries - halo_entries_;
  }

  // CSR (rows, entries) times a dense matrix of `width` columns; `cached`: whether the rank's column-use
  // curve applies (the adjacency), else every gathered row comes from memory.
  double spmm(int64_t rows, int64_t entries, int64_t width, int64_t x_rows, bool cached = true) {
    const double hit = cached ? cached_entry_share(traffic_.top_column_entries,
                                                   cache_bytes_ / (element_ * static_cast<double>(width)))
                              : 0.0;
    const double bytes = spmm_model_bytes(rows, entries, width, hit, element_);
    estimate.spmm_bytes += static_cast<int64_t>(bytes);
    const double ms = bytes / (spmm_rate_at(rates_, width, x_rows) * 1e6);
    estimate.spmm_ms += ms;
    return ms;
  }

  // (m x k)(k x n) in either transposition.
  void gemm(int64_t m, int64_t k, int64_t n) {
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
    const double bytes =
        kFloat * (static_cast<double>(m) * k + static_cast<double>(k) * n + static_cast<double>(m) * n);
    estimate.gemm_flops += static_cast<int64_t>(flops);
    estimate.gemm_ms += std::max(flops / (rates_.gemm_gflops * 1e6), bytes / (rates_.stream_gbs * 1e6));
  }

  // Elementwise work: `rng` dropout decisions and `bytes` moved.
  void elementwise(double rng, double bytes) {
    estimate.elementwise_ms += rng / (rates_.dropout_gelems * 1e6) + bytes / (rates_.stream_gbs * 1e6);
  }

  // One distributed product S x (or S^T g) of `width` columns: the owned part hides the exchange.
  void distributed_product(int64_t width) {
    const int64_t x_rows = shape_.num_owned + shape_.num_halo;
    const double own_ms = spmm(shape_.num_owned, own_entries_, width, x_rows);
    if (shape_.num_halo == 0 && shape_.num_send == 0) return;
    spmm(shape_.num_owned, halo_entries_, width, x_rows);
    const double rows = static_cast<double>(std::max(shape_.num_send, shape_.num_halo));
    const double wire = element_ * static_cast<double>(width) * rows;
    const double pack =
        2.0 * element_ * static_cast<double>(width) *
        static_cast<double>(shape_.num_send + shape_.num_halo);  // pack / unpack, read + write
    const double exchange_ms = static_cast<double>(traffic_.peers) * profile_.link_latency_us * 1e-3 +
                               wire / (exchange_gbs() * 1e6) + pack / (rates_.stream_gbs * 1e6);
    estimate.halo_bytes += static_cast<int64_t>(wire);
    estimate.halo_ms += exchange_ms;
    estimate.halo_exposed_ms +=
        profile_.overlap ? exchange_ms - std::min(profile_.overlap_share * exchange_ms, own_ms) : exchange_ms;
  }

  EpochEstimate estimate;

 private:
  double exchange_gbs() const { return profile_.exchange_gbs > 0 ? profile_.exchange_gbs : profile_.link_gbs; }

  const nn::RankShape& shape_;
  const RankTraffic& traffic_;
  const DeviceProfile& profile_;
  const ComputeRates& rates_;
  double element_ = kFloat;
  int64_t own_entries_ = 0, halo_entries_ = 0;
  double cache_bytes_ = 0;
};

}  // namespace

EpochEstimate estimate_epoch(const nn::ModelConfig& config, const nn::RankShape& shape,
                             const RankTraffic& traffic, int num_ranks, const DeviceProfile& profile,
                             int threads) {
  const std::string model = nn::model_spec(config).name;
  if (model != "gcn") throw UserError("plan: the epoch-time model covers --model gcn only (got " + model + ")");
  HALOGEN_USER_CHECK(num_ranks == 1 || profile.link_gbs > 0,
                     "plan: device profile %s has no link bandwidth (link_gbs), needed for %d ranks",
                     profile.name.c_str(), num_ranks);
  const ComputeRates& rates = profile.rates_for(threads);
  HALOGEN_USER_CHECK(
      rates.stream_gbs > 0 && rates.gemm_gflops > 0 && rates.dropout_gelems > 0 && !rates.spmm_gbs.empty(),
      "plan: device profile %s lacks a rate (stream_gbs, spmm_gbs, gemm_gflops, dropout_gelems)",
      profile.name.c_str());
  EpochCost cost(shape, traffic, profile, rates, /*self_loops=*/true, profile.cache_shared ? num_ranks : 1,
                 config.bf16 ? 2.0 : kFloat);
  const std::vector<int64_t> widths = nn::Model::layer_widths(config, shape.num_features, shape.num_classes);
  const int64_t n = shape.num_owned, layers = config.layers;
  const double nd = static_cast<double>(n);
  const bool dropout = config.dropout > 0.0f;
  const int64_t sparse_nonzeros = shape.sparse_feature_nonzeros;

  // An epilogue over `elements` values: with dropout, at the profile's measured rate of the fused epilogue
  // (its memory traffic included); without, a read and a write at stream bandwidth.
  auto epilogue = [&](double elements) {
    if (dropout)
      cost.elementwise(elements, 0.0);
    else
      cost.elementwise(0.0, 2 * kFloat * elements);
  };

  // Forward.
  if (dropout)  // input dropout (over the nonzeros on the sparse input path)
    epilogue(sparse_nonzeros > 0 ? static_cast<double>(sparse_nonzeros) : nd * static_cast<double>(widths[0]));
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    const bool transform_first = out < in;
    if (transform_first) {
      if (l == 0 && sparse_nonzeros > 0)
        cost.spmm(n, sparse_nonzeros, out, /*x_rows=*/widths[0], false);  // the sparse input times W
      else
        cost.gemm(n, in, out);
      cost.distributed_product(out);
    } else {
      cost.distributed_product(in);
      cost.gemm(n, in, out);
    }
    const double elements = nd * static_cast<double>(out);
    if (l + 1 < layers)
      epilogue(elements);  // bias, relu, dropout (no mask)
    else
      cost.elementwise(0.0, 2 * kFloat * elements);  // bias on the logits
  }
  cost.elementwise(0.0, 2 * kFloat * nd * static_cast<double>(widths.back()));  // loss and its gradient

  // Backward. The gradient allreduce starts when the last layer's gradients exist and overlaps the backward
  // of the layers below it (nn/gradient_reducer.h): that work is measured from here.
  double hidden_by_backward_ms = 0;
  auto compute_ms = [&] {
    const EpochEstimate& e = cost.estimate;
    return e.spmm_ms + e.gemm_ms + e.elementwise_ms + e.halo_exposed_ms;
  };
  for (int64_t l = layers - 1; l >= 0; --l) {
    if (l == layers - 2) hidden_by_backward_ms = -compute_ms();
    const int64_t in = widths[l], out = widths[l + 1];
    const bool transform_first = out<in, want_grad_x = l> 0;
    if (l == layers - 1) cost.elementwise(0.0, kFloat * nd * static_cast<double>(out));  // bias gradient
    if (transform_first) {
      cost.distributed_product(out);  // S^T dZ
      if (l == 0 && sparse_nonzeros > 0)
        cost.spmm(in, sparse_nonzeros, out, /*x_rows=*/n, false);
      else
        cost.gemm(in, n, out);  // dW
      if (want_grad_x) cost.gemm(n, out, in);
    } else {
      cost.gemm(in, n, out);  // dW
      if (want_grad_x) {
        cost.gemm(n, out, in);
        cost.distributed_product(in);
      }
    }
    // The epilogue's backward on the input (reads the gradient and the epilogue's output, writes the gradient),
    // with layer l-1's bias gradient in the same pass.
    if (want_grad_x) cost.elementwise(0.0, 3 * kFloat * nd * static_cast<double>(in));
  }

  if (layers > 1) hidden_by_backward_ms += compute_ms();

  // Gradient allreduce (ring) and Adam. Exposed: layer 0's gradients (ready last), or what the backward of
  // the lower layers did not hide, whichever is more.
  const double parameter_bytes =
      kFloat * static_cast<double>(nn::Model::parameter_count(config, shape.num_features, shape.num_classes));
  const double first_layer_bytes = kFloat * static_cast<double>(widths[0] * widths[1] + widths[1]);  // W_0, b_0
  EpochEstimate e = cost.estimate;
  if (num_ranks > 1) {
    const double p = num_ranks;
    auto ring_ms = [&](double bytes) {
      return 2.0 * (p - 1) / p * bytes / (profile.link_gbs * 1e6) +
             2.0 * (p - 1) * profile.link_latency_us * 1e-3;
    };
    e.allreduce_ms = ring_ms(parameter_bytes);
    e.allreduce_exposed_ms = std::max(ring_ms(first_layer_bytes), e.allreduce_ms - hidden_by_backward_ms);
  }
  e.optimizer_ms = 7.0 * parameter_bytes / (rates.stream_gbs * 1e6);
  e.epoch_ms =
      e.spmm_ms + e.gemm_ms + e.elementwise_ms + e.halo_exposed_ms + e.allreduce_exposed_ms + e.optimizer_ms;
  return e;
}

}  // namespace halogen::train
