#pragma once
// `halogen info DIR`: what each rank will allocate for training, predicted before launch from the shard
// files' sizes with the same formula the trainer prints next to its measured allocation
// (train::estimate_rank_memory).
#include <cstdint>
#include <string>
#include <vector>

#include "io/part_file.h"
#include "nn/model.h"

namespace halogen::app {

// The nn::RankShape of part `part` of partition directory `dir` as train::shard_rank_shape will see it once
// loaded, from dataset shapes, the shard's feature nonzeros and its halo-column entries (both streamed in
// blocks): the input of train::estimate_rank_memory for `halogen info` and `halogen plan`. With
// `column_counts`, the same pass over /csr/indices also counts each column's uses (one slot per owned and halo
// vertex; `halogen plan`'s cache model).
nn::RankShape read_part_shape(const std::string& dir, const io::PartitionMeta& meta, int part,
                              std::vector<int64_t>* column_counts = nullptr);

// Prints one line per part and the maximum; reads only dataset shapes and, for the input-path decision,
// each shard's features (streamed in blocks of rows).
// `device`: the device train will run on (the GPU stores every matrix's edge values: cuSPARSE takes them).
void print_training_memory(const std::string& dir, const nn::ModelConfig& config, Device device = Device::cpu);

}  // namespace halogen::app
