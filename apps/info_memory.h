#pragma once
// `halogen info DIR`: what each rank will allocate for training, predicted before launch from the shard
// files' sizes with the same formula the trainer prints next to its measured allocation
// (train::estimate_rank_memory).
#include <string>

#include "io/part_file.h"
#include "nn/model.h"

namespace halogen::app {

// The nn::RankShape of part `part` of partition directory `dir` as train::shard_rank_shape will see it once
// loaded, from dataset shapes and the shard's feature nonzeros (streamed in blocks of rows): the input of
// train::estimate_rank_memory for `halogen info` and `halogen plan`.
nn::RankShape read_part_shape(const std::string& dir, const io::PartitionMeta& meta, int part);

// Prints one line per part and the maximum; reads only dataset shapes and, for the input-path decision,
// each shard's features (streamed in blocks of rows).
void print_training_memory(const std::string& dir, const nn::ModelConfig& config);

}  // namespace halogen::app
