#include "train/node_task.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::train {
namespace {

class NodeTask final : public TemporalTask {
 public:
  NodeTask(comm::Communicator& comm, const graph::Shard& shard, const TaskConfig& config)
      : comm_(comm), n_(shard.num_owned()), classes_(shard.num_classes), labels_(shard.labels),
        train_(shard.train), valid_(shard.valid), test_(shard.test), steps_(static_cast<int64_t>(shard.snapshots.size())) {
    check_temporal_task(shard, config);  // labels
    int64_t counts[3] = {static_cast<int64_t>(train_.size()), static_cast<int64_t>(valid_.size()),
                         static_cast<int64_t>(test_.size())};
    comm.allreduce_sum(counts, 3);
    global_train_ = counts[0];
    global_valid_ = counts[1];
    global_test_ = counts[2];
    HALOGEN_USER_CHECK(global_train_ > 0 && global_test_ > 0,
                       "%s: --task node needs train and test splits (/split/train, /split/test); found %lld and %lld",
                       config.source.c_str(), (long long)global_train_, (long long)global_test_);
    for (const auto* split : {&train_, &valid_, &test_}) {
      for (int64_t v : *split) {
        HALOGEN_USER_CHECK(labels_[v] >= 0 && labels_[v] < classes_, "%s: split vertex %lld has label %d",
                           config.source.c_str(), (long long)shard.owned_gid[v], labels_[v]);
      }
    }
    features_ = Tensor(n_, std::max<int64_t>(shard.num_features, 1), Device::cpu);
    if (shard.num_features > 0) {
      std::copy(shard.features.begin(), shard.features.end(), features_.data());
    } else {
      std::fill(features_.data(), features_.data() + n_, 1.0f);  // no features: a constant input
    }
    last_ = Tensor(n_, classes_, Device::cpu);
  }

  TaskKind kind() const override { return TaskKind::node; }
  int64_t input_width() const override { return features_.matrix().cols; }
  int64_t num_steps() const override { return steps_; }
  int64_t train_steps() const override { return steps_; }
  int64_t snapshot_of(int64_t step) const override { return step; }
  Matrix<const float> input(int64_t) override { return Matrix<const float>(features_.matrix()); }

  double loss(int64_t, Matrix<const float> y, float scale, Matrix<float> grad_y) override {
    HALOGEN_ASSERT(y.cols == classes_);
    std::fill(grad_y.data, grad_y.data + n_ * classes_, 0.0f);
    if (train_.empty()) return 0.0;
    const float inv = 1.0f / static_cast<float>(global_train_);
    return inv * kernels::softmax_cross_entropy(y, span(labels_), span(train_), inv * scale, grad_y, nullptr);
  }

  void observe(int64_t, Matrix<const float> y) override {
    std::copy(y.data, y.data + n_ * classes_, last_.data());
    observed_ = true;
  }

  Metrics metrics() override {
    HALOGEN_ASSERT(observed_);
    observed_ = false;
    // Correct counts per split, then per-class true positives, predictions and labels on the test split.
    std::vector<int64_t> counts(3 + 3 * classes_, 0);
    const std::vector<int64_t>* splits[3] = {&train_, &valid_, &test_};
    Matrix<const float> y = last_.matrix();
    for (int s = 0; s < 3; ++s) {
      for (int64_t v : *splits[s]) {
        const int64_t predicted = std::max_element(y.row(v), y.row(v) + classes_) - y.row(v);
        if (predicted == labels_[v]) ++counts[s];
        if (s == 2) {
          counts[3 + 3 * predicted + 1] += 1;
          counts[3 + 3 * labels_[v] + 2] += 1;
          if (predicted == labels_[v]) counts[3 + 3 * predicted] += 1;
        }
      }
    }
    comm_.allreduce_sum(counts.data(), static_cast<int64_t>(counts.size()));
    // Mean cross-entropy of the last step's output over the validation vertices (log-sum-exp, max
    // subtracted).
    double valid_loss = 0;
    for (int64_t v : valid_) {
      const float* row = y.row(v);
      const float top = *std::max_element(row, row + classes_);
      double sum = 0;
      for (int32_t c = 0; c < classes_; ++c) sum += std::exp(static_cast<double>(row[c] - top));
      valid_loss += std::log(sum) + static_cast<double>(top - row[labels_[v]]);
    }
    comm_.allreduce_sum(&valid_loss, 1);
    double f1 = 0;
    for (int32_t c = 0; c < classes_; ++c) {
      const double tp = static_cast<double>(counts[3 + 3 * c]), predicted = static_cast<double>(counts[3 + 3 * c + 1]),
                   actual = static_cast<double>(counts[3 + 3 * c + 2]);
      if (predicted + actual > 0) f1 += 2.0 * tp / (predicted + actual);
    }
    auto ratio = [](int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    Metrics metrics{{"train_acc", ratio(counts[0], global_train_)},
                    {"valid_acc", ratio(counts[1], global_valid_)},
                    {"test_acc", ratio(counts[2], global_test_)},
                    {"test_macro_f1", f1 / classes_}};
    if (global_valid_ > 0) metrics["valid_loss"] = valid_loss / static_cast<double>(global_valid_);
    return metrics;
  }

  int64_t bytes() const override {
    return (features_.size() + last_.size()) * static_cast<int64_t>(sizeof(float));
  }

 private:
  template <typename T>
  static Span<const T> span(const std::vector<T>& v) {
    return Span<const T>{v.data(), static_cast<int64_t>(v.size()), Device::cpu};
  }

  comm::Communicator& comm_;
  int64_t n_;
  int32_t classes_;
  std::vector<int32_t> labels_;
  std::vector<int64_t> train_, valid_, test_;
  int64_t steps_;
  int64_t global_train_ = 0, global_valid_ = 0, global_test_ = 0;
  Tensor features_, last_;
  bool observed_ = false;
};

}  // namespace

std::unique_ptr<TemporalTask> make_node_task(comm::Communicator& comm, const graph::Shard& shard,
                                             const TaskConfig& config) {
  return std::make_unique<NodeTask>(comm, shard, config);
}

}  // namespace halogen::train
