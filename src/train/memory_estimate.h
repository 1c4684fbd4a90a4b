#pragma once
// What one rank will allocate for training (Buffers: model, halo exchange, optimizer), predicted from sizes
// that a partition directory's meta.json already holds. `halogen info DIR` can call this; the trainer prints
// the estimate next to the measured figure.
#include <cstdint>

#include "nn/model.h"

namespace halogen::train {

// Bytes of all Buffers a rank holds during training (model + Adam state).
int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape);

}  // namespace halogen::train
