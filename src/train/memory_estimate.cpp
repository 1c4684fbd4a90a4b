#include "train/memory_estimate.h"

namespace halogen::train {

int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape) {
  const std::vector<int64_t> widths = nn::Model::layer_widths(config, shape.num_features, shape.num_classes);
  int64_t num_parameters = 0;
  for (int l = 0; l < config.layers; ++l)
    num_parameters += widths[l] * widths[l + 1] * (config.kind == nn::ConvKind::sage ? 2 : 1) + widths[l + 1];
  const int64_t adam_bytes = 2 * num_parameters * static_cast<int64_t>(sizeof(float));
  return nn::Model::estimate_bytes(config, shape) + adam_bytes;
}

}  // namespace halogen::train
