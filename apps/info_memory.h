#pragma once
// `halogen info DIR`: what each rank will allocate for training, predicted before launch from the shard
// files' sizes with the same formula the trainer prints next to its measured allocation
// (train::estimate_rank_memory).
#include <string>

#include "nn/model.h"

namespace halogen::app {

// Prints one line per part and the maximum; reads only dataset shapes and, for the input-path decision,
// each shard's features (streamed in blocks of rows).
void print_training_memory(const std::string& dir, const nn::ModelConfig& config);

}  // namespace halogen::app
