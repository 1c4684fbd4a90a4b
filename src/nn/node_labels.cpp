// NodeLabels (nn/node_labels.h): the labelled rows of a rank, and the loss and accuracy over them.
#include "nn/node_labels.h"

#include <vector>

#include "core/error.h"

namespace halogen::nn {

NodeLabels::NodeLabels(const graph::Shard& shard, Device device) {
  const int64_t n = shard.num_owned();
  row_gid = Buffer<int64_t>(n, device);
  row_gid.copy_from_host(shard.owned_gid.data(), n);
  std::vector<int32_t> host_labels = shard.labels;
  if (host_labels.empty()) host_labels.assign(n, -1);
  labels = Buffer<int32_t>(n, device);
  labels.copy_from_host(host_labels.data(), n);
  const std::vector<int64_t>* splits[3] = {&shard.train, &shard.valid, &shard.test};
  for (int s = 0; s < 3; ++s) {
    std::vector<int64_t> rows;
    for (int64_t r : *splits[s]) {
      HALOGEN_ASSERT(r >= 0 && r < n);
      if (host_labels[r] >= 0) rows.push_back(r);
    }
    split_sizes[s] = static_cast<int64_t>(rows.size());
    split_rows[s] = Buffer<int64_t>(split_sizes[s], device);
    split_rows[s].copy_from_host(rows.data(), split_sizes[s]);
  }
}

double NodeLabels::loss(Matrix<const float> logits, int split, float scale, Matrix<float> grad,
                        kernels::Stream stream) const {
  HALOGEN_ASSERT(split >= 0 && split < 3, "split %d", split);
  return kernels::softmax_cross_entropy(
      logits, Span<const int32_t>{labels.data(), labels.size(), labels.device()},
      Span<const int64_t>{split_rows[split].data(), split_sizes[split], split_rows[split].device()}, scale,
      grad, stream);
}

std::array<int64_t, 3> NodeLabels::count_correct(Matrix<const float> logits, kernels::Stream stream) const {
  std::array<int64_t, 3> correct{};
  for (int s = 0; s < 3; ++s)
    correct[s] = kernels::count_correct(
        logits, Span<const int32_t>{labels.data(), labels.size(), labels.device()},
        Span<const int64_t>{split_rows[s].data(), split_sizes[s], split_rows[s].device()}, stream);
  return correct;
}

}  // namespace halogen::nn
