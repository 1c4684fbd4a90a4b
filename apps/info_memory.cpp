#include "apps/info_memory.h"

#include <algorithm>
#include <cstdio>

#include "core/format.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "nn/attention_graph.h"
#include "nn/model_registry.h"
#include "train/memory_estimate.h"

namespace halogen::app {
namespace {

int64_t length_of(const h5::File& file, const std::string& dataset) {
  return file.exists(dataset) ? file.shape(dataset).at(0) : 0;
}

// Nonzero feature values of a shard, read in blocks so memory stays small for any shard size.
int64_t count_feature_nonzeros(const h5::File& file, int64_t rows) {
  if (!file.exists("/node/feat") || rows == 0) return 0;
  const int64_t cols = file.shape("/node/feat").back();
  const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(cols * 4, 1));
  int64_t nonzeros = 0;
  for (int64_t begin = 0; begin < rows; begin += block) {
    const std::vector<float> values = file.read_rows<float>("/node/feat", begin, std::min(rows, begin + block));
    nonzeros += std::count_if(values.begin(), values.end(), [](float v) { return v != 0.0f; });
  }
  return nonzeros;
}

// Stored entries of a shard whose column is a halo vertex (local id >= rows), read in blocks; with
// `column_counts` (one slot per owned and halo vertex), also how often each column is used.
int64_t count_halo_entries(const h5::File& file, int64_t rows, std::vector<int64_t>* column_counts) {
  if (!file.exists("/csr/indices")) return 0;
  const int64_t entries = file.shape("/csr/indices").at(0), block = int64_t{4} << 20;
  int64_t halo = 0;
  for (int64_t begin = 0; begin < entries; begin += block) {
    const std::vector<int32_t> columns = file.read_rows<int32_t>("/csr/indices", begin, std::min(entries, begin + block));
    for (int32_t c : columns) {
      halo += c >= rows;
      if (column_counts != nullptr && c >= 0 && static_cast<size_t>(c) < column_counts->size()) ++(*column_counts)[c];
    }
  }
  return halo;
}

// What each line of the breakdown holds.
const char* breakdown_meaning(const std::string& name) {
  if (name == "structure") return "adjacency: A_own, A_halo, transposes (a symmetric A_own is its own)";
  if (name == "halo") return "halo exchange buffers, reverse-exchange partial sums";
  if (name == "features") return "features, global ids, labels, split rows";
  if (name == "activations") return "kept for the backward: layer outputs, A X or T, masks";
  if (name == "gradients") return "dLoss/dZ of the last layer (APPNP: and of its propagation)";
  if (name == "workspace") return "shared by lifetime: layer scratch, hidden dLoss/dZ, X_0, BF16 blocks";
  if (name == "parameters") return "parameters and their gradients";
  if (name == "optimizer") return "Adam's m and v";
  return "";
}

}  // namespace

nn::RankShape read_part_shape(const std::string& dir, const io::PartitionMeta& meta, int part,
                              std::vector<int64_t>* column_counts) {
  const h5::File file(io::shard_path(dir, part), h5::Mode::read);
  nn::RankShape shape;
  shape.num_owned = length_of(file, "/owned/gid");
  shape.num_halo = length_of(file, "/halo/gid");
  shape.nnz = length_of(file, "/csr/indices");
  shape.num_send = length_of(file, "/send/idx");
  shape.num_features = meta.num_features;
  shape.num_classes = meta.num_classes;
  shape.num_split_rows =
      length_of(file, "/split/train") + length_of(file, "/split/valid") + length_of(file, "/split/test");
  if (column_counts != nullptr) column_counts->assign(static_cast<size_t>(shape.num_owned + shape.num_halo), 0);
  shape.halo_nnz = count_halo_entries(file, shape.num_owned, column_counts);
  // An undirected graph's shards store their owned block both ways; the model checks the stored entries (and
  // weights) when it builds the adjacency (graph::LocalGraph::a_own_symmetric).
  shape.own_symmetric = !meta.directed;
  const int64_t nonzeros = count_feature_nonzeros(file, shape.num_owned);
  if (nn::Model::uses_sparse_input(nonzeros, shape.num_owned, shape.num_features))
    shape.sparse_feature_nonzeros = nonzeros;
  return shape;
}

void print_training_memory(const std::string& dir, const nn::ModelConfig& config, Device device) {
  const io::PartitionMeta meta = io::read_partition_meta(dir);
  std::printf(
      "training memory per rank on %s (model %s, %d layers, hidden %lld%s; all buffers are allocated before "
      "epoch 1)\n",
      device_name(device), nn::model_spec(config).name.c_str(), config.layers, static_cast<long long>(config.hidden),
      nn::model_summary(config).c_str());
  std::printf("  part        owned         halo            nnz      predicted\n");
  int64_t max_bytes = 0, total_bytes = 0;
  int max_part = 0;
  nn::MemoryBreakdown max_breakdown;
  for (int part = 0; part < meta.num_parts; ++part) {
    nn::RankShape shape = read_part_shape(dir, meta, part);
    shape.device = device;
    const nn::MemoryBreakdown breakdown = train::estimate_rank_breakdown(config, shape);
    const int64_t bytes = breakdown.total();
    if (part == 0 || bytes > max_bytes) {
      max_part = part;
      max_breakdown = breakdown;
    }
    max_bytes = std::max(max_bytes, bytes);
    total_bytes += bytes;
    std::printf("  %4d %12lld %12lld %14lld %10.1f MiB\n", part, static_cast<long long>(shape.num_owned),
                static_cast<long long>(shape.num_halo), static_cast<long long>(shape.nnz), bytes / 1048576.0);
  }
  std::printf("  max per rank %.1f MiB, all ranks %.1f MiB (plus the MPI/CUDA runtime and the shard while it "
              "is read)\n",
              max_bytes / 1048576.0, total_bytes / 1048576.0);
  std::printf("memory plan of part %d (the largest), by what holds it:\n", max_part);
  for (const auto& [name, bytes] : max_breakdown.items())
    std::printf("  %-12s %10.1f MiB  %5.1f%%  %s\n", name, bytes / 1048576.0,
                max_bytes > 0 ? 100.0 * static_cast<double>(bytes) / static_cast<double>(max_bytes) : 0.0,
                breakdown_meaning(name));
  std::printf("  %-12s %10.1f MiB\n", "total", max_bytes / 1048576.0);
  if (nn::model_spec(config).name == "gat") {  // what GAT holds per attention edge
    const nn::RankShape shape = read_part_shape(dir, meta, max_part);
    const int64_t edges = nn::AttentionGraph::edges_for(shape.num_owned, shape.nnz);
    std::printf("  GAT per attention edge: %lld bytes (%lld edges incl. self-loops on part %d: a column id and its "
                "transpose's row id, in structure; the fused attention keeps no per-edge tensor, only 5 floats "
                "per owned vertex and head)\n",
                static_cast<long long>(nn::AttentionGraph::bytes_for(0, 0, 1) - nn::AttentionGraph::bytes_for(0, 0, 0)),
                static_cast<long long>(edges), max_part);
  }
}

}  // namespace halogen::app
