#pragma once
// What one rank will allocate for training (Buffers: model, halo exchange, optimizer), predicted from sizes
// that a partition directory's meta.json already holds. `halogen info DIR` can call this; the trainer prints
// the estimate next to the measured figure.
#include <cstdint>

#include "graph/shard.h"
#include "nn/model.h"

namespace halogen::train {

// Bytes of all Buffers a rank holds during training (model + Adam state).
int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape);

// The RankShape of a loaded shard as the trainer will build it (the sparse input path when it pays, as
// nn::Model decides).
nn::RankShape shard_rank_shape(const graph::Shard& shard);

// Memory planned before allocation: a UserError naming the per-rank figure of estimate_rank_memory (the model of
// `halogen info DIR --hidden ...`), the ranks sharing this node and the memory available (MemAvailable or the
// cgroup's limit, core/memory.h) when ranks_on_node times the figure does not fit. `halogen train
// --ignore-memory-check` skips it.
void check_rank_memory_fits(const nn::ModelConfig& config, const graph::Shard& shard, int ranks_on_node);

}  // namespace halogen::train
