#pragma once
// EvolveGCN-O on snapshot sequences (definition in nn/temporal_model.h and docs/dynamic.md).
#include <cstdint>
#include <memory>

#include "nn/temporal_model.h"

namespace halogen::nn {

std::unique_ptr<TemporalModel> make_evolvegcn_o(const TemporalModelConfig& config, int64_t num_owned);

}  // namespace halogen::nn
