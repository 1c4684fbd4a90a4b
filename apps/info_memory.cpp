#include "apps/info_memory.h"

#include <algorithm>
#include <cstdio>

#include "core/format.h"
#include "io/h5.h"
#include "io/part_file.h"
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

}  // namespace

nn::RankShape read_part_shape(const std::string& dir, const io::PartitionMeta& meta, int part) {
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
  const int64_t nonzeros = count_feature_nonzeros(file, shape.num_owned);
  if (nn::Model::uses_sparse_input(nonzeros, shape.num_owned, shape.num_features))
    shape.sparse_feature_nonzeros = nonzeros;
  return shape;
}

void print_training_memory(const std::string& dir, const nn::ModelConfig& config) {
  const io::PartitionMeta meta = io::read_partition_meta(dir);
  std::printf(
      "training memory per rank (model %s, %d layers, hidden %lld%s; all buffers are allocated before "
      "epoch 1)\n",
      nn::conv_kind_name(config.kind), config.layers, static_cast<long long>(config.hidden),
      config.kind == nn::ConvKind::appnp ? strformat(", K %d", config.appnp_k).c_str()
      : config.kind == nn::ConvKind::gat
          ? strformat(", %d heads, %d output heads, %s dropout", config.gat_heads, config.gat_output_heads,
                      nn::gat_dropout_name(config.gat_per_head_dropout)).c_str()
          : "");
  std::printf("  part        owned         halo            nnz      predicted\n");
  int64_t max_bytes = 0, total_bytes = 0;
  for (int part = 0; part < meta.num_parts; ++part) {
    const nn::RankShape shape = read_part_shape(dir, meta, part);
    const int64_t bytes = train::estimate_rank_memory(config, shape);
    max_bytes = std::max(max_bytes, bytes);
    total_bytes += bytes;
    std::printf("  %4d %12lld %12lld %14lld %10.1f MiB\n", part, static_cast<long long>(shape.num_owned),
                static_cast<long long>(shape.num_halo), static_cast<long long>(shape.nnz), bytes / 1048576.0);
  }
  std::printf("  max per rank %.1f MiB, all ranks %.1f MiB (plus the MPI/CUDA runtime and the shard while it "
              "is read)\n",
              max_bytes / 1048576.0, total_bytes / 1048576.0);
}

}  // namespace halogen::app
