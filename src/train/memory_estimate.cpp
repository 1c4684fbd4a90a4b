#include "train/memory_estimate.h"

namespace halogen::train {

int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape) {
  const int64_t num_parameters = nn::Model::parameter_count(config, shape.num_features, shape.num_classes);
  const int64_t adam_bytes = 2 * num_parameters * static_cast<int64_t>(sizeof(float));
  return nn::Model::estimate_bytes(config, shape) + adam_bytes;
}

}  // namespace halogen::train
