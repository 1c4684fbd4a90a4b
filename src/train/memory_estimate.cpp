#include "train/memory_estimate.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/format.h"
#include "core/memory.h"
#include "kernels/device.h"
#include "nn/distributed_adjacency.h"
#include "nn/model_registry.h"
#include "nn/temporal_registry.h"

namespace halogen::train {

nn::MemoryBreakdown estimate_rank_breakdown(const nn::ModelConfig& config, const nn::RankShape& shape) {
  const nn::ModelSpec& spec = nn::model_spec(config);
  nn::MemoryBreakdown breakdown = spec.estimate(config, shape);
  const int64_t num_parameters = spec.parameter_count(config, shape.num_features, shape.num_classes);
  breakdown.optimizer = 2 * num_parameters * static_cast<int64_t>(sizeof(float));  // Adam's m and v
  return breakdown;
}

int64_t estimate_rank_memory(const nn::ModelConfig& config, const nn::RankShape& shape) {
  return estimate_rank_breakdown(config, shape).total();
}

nn::RankShape shard_rank_shape_without_features(const graph::Shard& shard) {
  nn::RankShape shape;
  shape.num_owned = shard.num_owned();
  shape.num_halo = shard.num_halo();
  shape.nnz = shard.nnz();
  shape.num_send = static_cast<int64_t>(shard.plan.send_idx.size());
  shape.num_features = shard.num_features;
  shape.num_classes = shard.num_classes;
  shape.num_split_rows = static_cast<int64_t>(shard.train.size() + shard.valid.size() + shard.test.size());
  const int64_t n = shape.num_owned;
  shape.halo_nnz = std::count_if(shard.indices.begin(), shard.indices.end(), [n](int32_t c) { return c >= n; });
  // Predicted, like `halogen info`: an undirected graph's owned block is symmetric. The model checks the stored
  // entries once when it builds the adjacency (graph::LocalGraph::a_own_symmetric), and a workload's estimate
  // takes that result.
  shape.own_symmetric = !shard.directed;
  return shape;
}

nn::RankShape shard_rank_shape(const graph::Shard& shard) {
  nn::RankShape shape = shard_rank_shape_without_features(shard);
  const int64_t nonzeros = std::count_if(shard.features.begin(), shard.features.end(), [](float v) { return v != 0; });
  if (nn::Model::uses_sparse_input(nonzeros, shape.num_owned, shape.num_features))
    shape.sparse_feature_nonzeros = nonzeros;
  return shape;
}

namespace {

// The host check (ranks_on_node ranks share the node's memory) or, on the GPU, this rank's device alone.
void check_fits(int64_t per_rank, int ranks_on_node, Device device, const std::string& what, const char* hint) {
  if (device == Device::cpu) {
    check_process_memory_fits(per_rank, what + " per rank", hint);  // a process limit holds per rank, the
                                                                     // node's memory for all of them
    const int ranks = std::max(1, ranks_on_node);
    check_memory_fits(saturating_bytes(per_rank, ranks),
                      strformat("%s at %.1f MiB per rank x %d rank(s) on this node", what.c_str(),
                                static_cast<double>(per_rank) / 1048576.0, ranks),
                      hint);
    return;
  }
  const bool forced = std::getenv("HALOGEN_MEMORY_AVAILABLE_MIB") != nullptr;
  const int64_t free_bytes = forced ? available_memory_bytes() : kernels::device::free_device_memory_bytes();
  if (free_bytes < 0 || per_rank <= free_bytes) return;
  throw UserError(strformat("%s needs %.1f MiB of GPU memory per rank, but only %.1f MiB is free on this rank's GPU "
                            "(%s)",
                            what.c_str(), static_cast<double>(per_rank) / 1048576.0,
                            static_cast<double>(free_bytes) / 1048576.0, hint));
}

}  // namespace

void check_rank_memory_fits(const nn::ModelConfig& config, const graph::Shard& shard, int ranks_on_node,
                            Device device) {
  nn::RankShape shape = shard_rank_shape(shard);
  shape.device = device;
  const int64_t per_rank = estimate_rank_memory(config, shape);
  check_fits(per_rank, ranks_on_node, device,
             strformat("training (part %d: hidden %lld, %lld classes, %d layers)", shard.part,
                       static_cast<long long>(config.hidden), static_cast<long long>(shard.num_classes),
                       config.layers),
             "`halogen info DIR` shows the per-rank figures; --ignore-memory-check tries anyway");
}

int64_t estimate_temporal_rank_memory(const nn::TemporalModelConfig& config, const graph::Shard& shard,
                                      const TemporalShape& shape, Device device) {
  constexpr int64_t kFloat = sizeof(float);
  const int64_t n = shard.num_owned(), window = std::max<int64_t>(1, shape.window);
  const int64_t in = std::max<int64_t>(1, shape.in), out = std::max<int64_t>(1, shape.out);
  const int64_t width = std::max({in, config.hidden, out});  // every width below is bounded by this one
  const int64_t slots = window + 1;
  // Snapshot adjacencies (self-loops added: at most n more entries each) and the shared halo scratch.
  int64_t bytes = 0, max_halo = 0;
  const nn::ValueLayout layout = nn::value_layout_of(nn::temporal_normalization(config.kind), false);
  for (const graph::ShardSnapshot& snapshot : shard.snapshots) {
    bytes += nn::DistributedAdjacency::bytes_for(n, snapshot.num_halo(), snapshot.nnz() + n,
                                                 static_cast<int64_t>(snapshot.plan.send_idx.size()), width,
                                                 layout, device);
    max_halo = std::max(max_halo, snapshot.num_halo());
  }
  bytes += 2 * (n + max_halo) * width * kFloat + n * static_cast<int64_t>(sizeof(int32_t));
  // Per-step caches for the window's backward plus per-step scratch, floats per vertex and slot of width
  // `width` (each cell's TemporalSpec::memory, nn/temporal_registry.h), and the slot-free scratch and head
  // (< 16 widths per vertex).
  const nn::TemporalCellMemory cell = nn::temporal_spec(config.kind).memory(config, width, slots);
  const int64_t per_slot = cell.per_slot;
  int64_t parameters = cell.parameters;
  bytes += cell.bytes;
  parameters += (width + 1) * out;                                  // the head
  bytes += (per_slot * slots + 16) * n * width * kFloat;            // caches and scratch
  bytes += 4 * parameters * kFloat;                                 // parameters, gradients, Adam m and v
  const int64_t staged = device == Device::cpu ? 0 : 1;
  bytes += ((2 + 2 * staged) * out + staged * in) * window * n * kFloat;  // outputs_, grads_ (and staging)
  // The task: every step's input (regression: lags per step; node/link: one static matrix, counted per
  // snapshot to stay an upper bound), its halo-extended copies (link), and the link pairs and their scores.
  const int64_t steps = std::max<int64_t>(1, static_cast<int64_t>(shard.snapshots.size()));
  bytes += (steps * n * in + 4 * (n + shard.num_halo()) * width) * kFloat;
  bytes += 2 * shard.target_steps * n * kFloat;  // regression: the series as stored and as learned (standardised)
  for (const graph::ShardLinkStep& step : shard.link_steps)
    bytes += step.num_pairs() * (2 * kFloat + 1) + step.num_fetched() * (width * 2 * kFloat + 8);
  return bytes;
}

void check_temporal_rank_memory_fits(const nn::TemporalModelConfig& config, const graph::Shard& shard,
                                     const TemporalShape& shape, int ranks_on_node, Device device) {
  const int64_t per_rank = estimate_temporal_rank_memory(config, shard, shape, device);
  check_fits(per_rank, ranks_on_node, device,
             strformat("training %s (part %d: hidden %lld, window %lld, %zu snapshots)",
                       nn::temporal_kind_name(config.kind), shard.part, static_cast<long long>(config.hidden),
                       static_cast<long long>(shape.window), shard.snapshots.size()),
             "an upper bound; --ignore-memory-check tries anyway");
}

}  // namespace halogen::train
