#include "train/regression_task.h"

#include <cmath>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "kernels/ops.h"

namespace halogen::train {
namespace {

class RegressionTask final : public TemporalTask {
 public:
  RegressionTask(comm::Communicator& comm, const graph::Shard& shard, const TaskConfig& config)
      : comm_(comm), n_(shard.num_owned()), lags_(config.lags), total_nodes_(shard.global_num_nodes) {
    const int64_t periods = shard.target_steps;
    train_ = check_temporal_task(shard, config);  // series, lags, --train-fraction
    raw_ = shard.targets;
    targets_ = raw_.data();
    series_ = raw_;
    steps_ = periods - lags_;
    for (int64_t i = 0; i < periods * n_; ++i) {
      HALOGEN_USER_CHECK(std::isfinite(targets_[i]), "%s: /node/target has a non-finite value (step %lld)",
                         config.source.c_str(), (long long)(i / std::max<int64_t>(n_, 1)));
    }
    // Per-vertex mean of the training targets (steps [0, train_) predict t = lags .. lags + train_ - 1), in the
    // file's units: the mean baseline.
    mean_.assign(n_, 0.0);
    for (int64_t s = 0; s < train_; ++s) {
      for (int64_t v = 0; v < n_; ++v) mean_[v] += target(s + lags_, v);
    }
    for (double& m : mean_) m /= static_cast<double>(train_);
    // Per-vertex standardisation by the values the training steps see (t < lags + train_: their inputs and
    // targets; the test weeks' values are never looked at): z = (y - shift) / scale. A series that is constant
    // there (or nearly: its spread below 1e-7 of its level) gets scale 1, so it is kept, not blown up.
    shift_.assign(n_, 0.0);
    scale_.assign(n_, 1.0);
    if (config.scaling == TargetScaling::per_node) {
      const int64_t seen = lags_ + train_;
      for (int64_t v = 0; v < n_; ++v) {
        double sum = 0;
        for (int64_t t = 0; t < seen; ++t) sum += target(t, v);
        const double mean = sum / static_cast<double>(seen);
        double squares = 0;
        for (int64_t t = 0; t < seen; ++t) squares += (target(t, v) - mean) * (target(t, v) - mean);
        const double std = std::sqrt(squares / static_cast<double>(seen));
        shift_[v] = mean;
        scale_[v] = std > 1e-7 * std::max(1.0, std::fabs(mean)) ? std : 1.0;
      }
      for (int64_t t = 0; t < periods; ++t) {
        for (int64_t v = 0; v < n_; ++v)
          series_[t * n_ + v] = static_cast<float>((target(t, v) - shift_[v]) / scale_[v]);
      }
    }
    // The source's units (convert --preprocess): a standardisation needs the shard's per-node record, which
    // partitions made before it was written lack (then the figures are not reported, on every rank alike).
    if (shard.target_preprocess == "log1p") {
      units_ = SourceUnits::expm1;
    } else if (shard.target_preprocess == "standardize per node") {
      const bool recorded = static_cast<int64_t>(shard.target_scale.size()) == n_;
      units_ = recorded ? SourceUnits::scaled : SourceUnits::unknown;
      original_scale_ = shard.target_scale;
    }
    inputs_ = Tensor(steps_ * n_, lags_, Device::cpu);
    for (int64_t s = 0; s < steps_; ++s) {
      for (int64_t v = 0; v < n_; ++v) {
        for (int64_t l = 0; l < lags_; ++l) inputs_.data()[(s * n_ + v) * lags_ + l] = series_[(s + l) * n_ + v];
      }
    }
  }

  TaskKind kind() const override { return TaskKind::regression; }
  int64_t input_width() const override { return lags_; }
  int64_t num_steps() const override { return steps_; }
  int64_t train_steps() const override { return train_; }
  int64_t snapshot_of(int64_t step) const override { return step + lags_ - 1; }
  Matrix<const float> input(int64_t step) override {
    return Matrix<const float>(inputs_.matrix().slice_rows(step * n_, (step + 1) * n_));
  }

  double loss(int64_t step, Matrix<const float> y, float scale, Matrix<float> grad_y) override {
    HALOGEN_ASSERT(y.cols == 1 && grad_y.cols == 1);
    const double inv_n = 1.0 / static_cast<double>(total_nodes_);
    // d (scale * sum e^2 / N) / dy = 2 e scale / N
    return inv_n * kernels::squared_error(y, target_row(step + lags_), 2.0 * inv_n * scale, grad_y);
  }

  // The test error in the file's units: the standardised output mapped back, (y - z) * scale; and in the
  // source's units when the file records its transform.
  void observe(int64_t step, Matrix<const float> y) override {
    HALOGEN_ASSERT(y.cols == 1 && y.rows == n_ && y.device == Device::cpu);
    const int64_t t = step + lags_;
    const float* z = series_.data() + t * n_;
    double sum = 0, sum_original = 0;
    for (int64_t v = 0; v < n_; ++v) {
      const double output = y.data[v * y.stride];
      const double e = (output - z[v]) * scale_[v];
      sum += e * e;
      double e_original = 0;
      if (units_ == SourceUnits::scaled) e_original = e * original_scale_[v];
      if (units_ == SourceUnits::expm1) e_original = original_error(output * scale_[v] + shift_[v], target(t, v), v);
      sum_original += e_original * e_original;
    }
    sums_[0] += sum;
    sums_[1] += sum_original;
    ++observed_steps_;
  }

  Metrics metrics() override {
    // stored-unit sum, source-unit sum, ranks that cannot map back (the same reduction on every rank)
    double sums[3] = {sums_[0], sums_[1], units_ == SourceUnits::unknown ? 1.0 : 0.0};
    comm_.allreduce_sum(sums, 3);
    const double count = static_cast<double>(observed_steps_) * static_cast<double>(total_nodes_);
    sums_[0] = sums_[1] = 0;
    observed_steps_ = 0;
    Metrics metrics{{"test_mse", count > 0 ? sums[0] / count : 0.0}};
    if (reports_original(sums[2])) metrics["test_mse_original"] = count > 0 ? sums[1] / count : 0.0;
    return metrics;
  }

  Metrics baselines() override {
    // last value, training mean; then the same in the source's units; ranks that cannot map back
    double sums[5] = {0, 0, 0, 0, units_ == SourceUnits::unknown ? 1.0 : 0.0};
    for (int64_t s = train_; s < steps_; ++s) {
      const int64_t t = s + lags_;
      for (int64_t v = 0; v < n_; ++v) {
        const double y = target(t, v);
        sums[0] += (target(t - 1, v) - y) * (target(t - 1, v) - y);
        sums[1] += (mean_[v] - y) * (mean_[v] - y);
        if (units_ == SourceUnits::scaled || units_ == SourceUnits::expm1) {
          const double last = original_error(target(t - 1, v), y, v), mean = original_error(mean_[v], y, v);
          sums[2] += last * last;
          sums[3] += mean * mean;
        }
      }
    }
    comm_.allreduce_sum(sums, 5);
    const double count = static_cast<double>(steps_ - train_) * static_cast<double>(total_nodes_);
    Metrics figures{{"baseline_last_mse", sums[0] / count}, {"baseline_mean_mse", sums[1] / count}};
    if (reports_original(sums[4])) {
      figures["baseline_last_mse_original"] = sums[2] / count;
      figures["baseline_mean_mse_original"] = sums[3] / count;
    }
    return figures;
  }

  int64_t bytes() const override {
    return (steps_ * n_ * lags_ + static_cast<int64_t>(raw_.size() + series_.size())) * static_cast<int64_t>(sizeof(float));
  }

 private:
  // How the file's values map back to the source's (convert --preprocess, recorded in the graph file):
  //   none     no transform recorded, or "none": the file's units are the source's; nothing more reported
  //   scaled   per-node standardisation: source = stored * original_scale_[v] + offset_v, so an error scales
  //   expm1    log1p: source = expm1(stored)
  //   unknown  a standardisation, but the shard predates its per-node record: not reported
  enum class SourceUnits { none, scaled, expm1, unknown };

  // Whether the source-unit figures are reported: a transform is recorded and no rank (`unknown_ranks`, summed
  // over ranks) lacks its record. Says so once (rank 0) when a partition is too old for them.
  bool reports_original(double unknown_ranks) {
    if (unknown_ranks > 0 && !noted_unknown_) {
      log::info("note: the targets' per-node standardisation is not in this partition's shards (made before "
                "they carried it): figures in the original units (*_original) are not reported; run `halogen "
                "partition` again for them");
      noted_unknown_ = true;
    }
    return unknown_ranks == 0 && units_ != SourceUnits::none;
  }

  // The error of prediction p of y (both in the file's units) of owned vertex v, in the source's units.
  double original_error(double p, double y, int64_t v) const {
    return units_ == SourceUnits::expm1 ? std::expm1(p) - std::expm1(y) : (p - y) * original_scale_[v];
  }

  // y_t of vertex v in the file's units (the baselines and the statistics).
  double target(int64_t t, int64_t v) const { return static_cast<double>(targets_[t * n_ + v]); }
  // z_t (what the model learns: standardised, or the file's values with --target-scaling none) of the owned
  // vertices as an (n_own, 1) view.
  Matrix<const float> target_row(int64_t t) const {
    return Matrix<const float>{series_.data() + t * n_, n_, 1, 1, Device::cpu};
  }

  comm::Communicator& comm_;
  int64_t n_, lags_, total_nodes_;
  int64_t steps_ = 0, train_ = 0;
  std::vector<float> series_;       // (T, n_own): z, what the model learns
  std::vector<float> raw_;          // (T, n_own): the shard's values (file units)
  const float* targets_ = nullptr;  // raw_.data()
  std::vector<double> shift_, scale_;  // per owned vertex: z = (y - shift) / scale
  Tensor inputs_;                   // (steps * n, lags)
  std::vector<double> mean_;
  SourceUnits units_ = SourceUnits::none;
  std::vector<double> original_scale_;  // (n_own) scaled: the source's units per stored unit
  double sums_[2] = {0, 0};             // squared test errors since the last metrics(): file, source units
  int64_t observed_steps_ = 0;
  bool noted_unknown_ = false;
};

}  // namespace

std::unique_ptr<TemporalTask> make_regression_task(comm::Communicator& comm, const graph::Shard& shard,
                                                   const TaskConfig& config) {
  return std::make_unique<RegressionTask>(comm, shard, config);
}

}  // namespace halogen::train
