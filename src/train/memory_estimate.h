#pragma once
// What one rank will allocate for training (Buffers: model, halo exchange, optimizer), predicted from sizes
// that a partition directory's meta.json already holds. `halogen info DIR` can call this; the trainer prints
// the estimate next to the measured figure.
#include <cstdint>

#include "graph/shard.h"
#include "nn/model.h"
#include "nn/temporal_model.h"

namespace halogen::train {

// Bytes of all Buffers a rank holds during training (model + Adam state).
int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape);
// The same by what holds it (nn::MemoryBreakdown, the optimizer included).
nn::MemoryBreakdown estimate_rank_breakdown(const nn::ModelConfig& config, const nn::RankShape& shape);

// The RankShape of a loaded shard as the trainer will build it (the sparse input path when it pays, as
// nn::Model decides).
nn::RankShape shard_rank_shape(const graph::Shard& shard);
// shard_rank_shape without its scan of the features: sparse_feature_nonzeros is 0, for a caller that knows it
// (nn::Model::sparse_input_nonzeros of a built model) and sets it.
nn::RankShape shard_rank_shape_without_features(const graph::Shard& shard);

// Memory planned before allocation: a UserError naming the per-rank figure of estimate_rank_memory (the model of
// `halogen info DIR --hidden ...`), the ranks sharing this node and the memory available (MemAvailable or the
// cgroup's limit, core/memory.h) when ranks_on_node times the figure does not fit. `halogen train
// --ignore-memory-check` skips it.
// On --device cuda the figure is compared with the free memory of this rank's GPU instead
// (kernels::device::free_device_memory_bytes; HALOGEN_MEMORY_AVAILABLE_MIB replaces it as on the host).
void check_rank_memory_fits(const nn::ModelConfig& config, const graph::Shard& shard, int ranks_on_node,
                            Device device = Device::cpu);

// The widths of a temporal run as cmd_train knows them before the task is built: `in` (features of the node
// and link tasks, lags of regression), `out` (classes, 1, the link embedding), `window` (the BPTT window in
// steps; the number of snapshots when the whole span is one window).
struct TemporalShape {
  int64_t in = 1, out = 1, window = 1;
  int64_t negatives = 0;  // link: sampled negatives per positive
};

// A conservative upper bound of the bytes one rank allocates for a temporal model (TemporalWorkload and what
// it owns), from the shard's snapshot sizes and the model config, before anything is allocated: the
// snapshot adjacencies and halo buffers (nn::DistributedAdjacency::bytes_for with the self-loops counted),
// the model's per-step caches kept for the window's backward (an upper bound of each model's
// scratch_bytes() with every width replaced by max(in, hidden, out) and (window + 1) slots), parameters,
// gradients and Adam's m and v (a bound of the parameter count), the window's outputs and their gradients
// (and their host staging on the GPU), and the task's inputs. Never below TemporalWorkload::estimated_bytes()
// for the same run; tests/train/temporal_memory.sh pins the ratio to the measured allocation.
int64_t estimate_temporal_rank_memory(const nn::TemporalModelConfig& config, const graph::Shard& shard,
                                      const TemporalShape& shape, Device device);

// check_rank_memory_fits for a temporal model: the per-rank figure of estimate_temporal_rank_memory.
void check_temporal_rank_memory_fits(const nn::TemporalModelConfig& config, const graph::Shard& shard,
                                     const TemporalShape& shape, int ranks_on_node, Device device);

}  // namespace halogen::train
