#include "train/memory_estimate.h"

#include <algorithm>

#include "core/error.h"
#include "core/format.h"
#include "core/memory.h"

namespace halogen::train {

int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape) {
  const int64_t num_parameters = nn::Model::parameter_count(config, shape.num_features, shape.num_classes);
  const int64_t adam_bytes = 2 * num_parameters * static_cast<int64_t>(sizeof(float));
  return nn::Model::estimate_bytes(config, shape) + adam_bytes;
}

nn::RankShape shard_rank_shape(const graph::Shard& shard) {
  nn::RankShape shape;
  shape.num_owned = shard.num_owned();
  shape.num_halo = shard.num_halo();
  shape.nnz = shard.nnz();
  shape.num_send = static_cast<int64_t>(shard.plan.send_idx.size());
  shape.num_features = shard.num_features;
  shape.num_classes = shard.num_classes;
  shape.num_split_rows = static_cast<int64_t>(shard.train.size() + shard.valid.size() + shard.test.size());
  const int64_t nonzeros = std::count_if(shard.features.begin(), shard.features.end(), [](float v) { return v != 0; });
  if (nn::Model::uses_sparse_input(nonzeros, shape.num_owned, shape.num_features))
    shape.sparse_feature_nonzeros = nonzeros;
  return shape;
}

void check_rank_memory_fits(const nn::ModelConfig& config, const graph::Shard& shard, int ranks_on_node) {
  const int64_t per_rank = estimate_rank_memory(config, shard_rank_shape(shard));
  const int ranks = std::max(1, ranks_on_node);
  check_memory_fits(saturating_bytes(per_rank, ranks),
                    strformat("training (part %d: hidden %lld, %lld classes, %d layers) at %.1f MiB per rank x %d "
                              "rank(s) on this node",
                              shard.part, static_cast<long long>(config.hidden),
                              static_cast<long long>(shard.num_classes), config.layers,
                              static_cast<double>(per_rank) / 1048576.0, ranks),
                    "`halogen info DIR` shows the per-rank figures; --ignore-memory-check tries anyway");
}

}  // namespace halogen::train
