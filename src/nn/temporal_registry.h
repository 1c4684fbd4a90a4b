#pragma once
// The temporal model registry: each temporal model (a recurrent cell over snapshot sequences, nn/temporal_model.h)
// is one TemporalSpec, made at the end of its cell's file (nn/evolvegcn_o.cpp, nn/tgcn.cpp, nn/gconvgru.cpp) and
// listed once in temporal_registry.cpp - the pattern of the static models' registry (nn/model_registry.h). A spec
// says what `train` and the memory plan need of its model, so that neither names a model:
//   - its name (--model NAME), description and operator normalisation;
//   - its training defaults (docs/dynamic.md, "Defaults");
//   - how to build it on a rank, and what its caches and parameters cost (train/memory_estimate.h);
//   - its options for the one-line model description.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/temporal_model.h"

namespace halogen::nn {

// Per-model defaults of options not given on the command line or in --config, chosen so that `halogen train
// --model M --task regression` beats both naive forecasts on Chickenpox (docs/dynamic.md, "Defaults").
struct TemporalTrainingDefaults {
  int64_t epochs = 50;
  int64_t windows_per_epoch = 0;  // --task regression only, when --window is not given (0: one window)
  float clip_grad_norm = 1.0f;    // --clip-grad-norm
  float lr = 0.01f;               // --lr
};

// A cell's memory beside the shared snapshot structures, for a model of width `width` (the widest of in, hidden,
// out) recording `slots` steps: floats per owned vertex, width and slot (caches and per-step scratch), trainable
// floats beside the head, and other bytes (EvolveGCN-O's evolving weights).
struct TemporalCellMemory {
  int64_t per_slot = 0;
  int64_t parameters = 0;
  int64_t bytes = 0;
};

// (An aggregate: the cells' files list its fields in this order.)
struct TemporalSpec {
  std::string name;  // --model NAME
  TemporalKind kind = TemporalKind::tgcn;
  std::string description;
  graph::Normalization normalization = graph::Normalization::gcn;  // of the SnapshotSequence's operator
  bool stacks_layers = false;  // --layers stacks its layers (else one recurrent cell: --layers must be 1)
  TemporalTrainingDefaults defaults;
  std::function<std::unique_ptr<TemporalModel>(const TemporalModelConfig&, int64_t num_owned)> make;
  std::function<TemporalCellMemory(const TemporalModelConfig&, int64_t width, int64_t slots)> memory;
  std::function<std::string(const TemporalModelConfig&)> summary;  // ", K 2" ("" without options)
};

// Every registered temporal model, in --model help order.
const std::vector<TemporalSpec>& temporal_specs();
// By name (UserError for another name) or kind.
const TemporalSpec& temporal_spec(const std::string& name);
const TemporalSpec& temporal_spec(TemporalKind kind);
bool is_temporal_model_name(const std::string& name);

// The cells' specs (their files).
TemporalSpec evolvegcn_o_spec();
TemporalSpec tgcn_spec();
TemporalSpec gconvgru_spec();

}  // namespace halogen::nn
