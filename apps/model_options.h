#pragma once
// The model options of the command line, declared once for every command that takes them (`train`,
// `bench epoch`, `info`, `plan`; `--config` files name the same options): --model, the options every static
// model shares (--layers, --hidden, --dropout, --edge-weight, --recompute, --precision) and each registered model's own
// (nn/model_registry.h), with the registry's validators and defaults. Their --help text is the same in every
// command. `predict` reads the same options back from a checkpoint (train/predict.h).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/model_registry.h"

namespace halogen::app {

struct ModelFlags {
  std::string model = "gcn";
  int layers = 2;
  int64_t hidden = 16;
  float dropout = 0.5f;
  bool edge_weight = false;
  bool recompute = false;
  std::string precision = "fp32";  // --precision fp32|bf16 (nn::ModelConfig::bf16)
  // The registered models' own options as given (or their defaults), by option name: text, and flags.
  std::map<std::string, std::string> values;
  std::map<std::string, bool> flags;
  const CLI::App* command = nullptr;  // where they were declared (which options were given)
};

// The temporal models `train` also runs (nn/temporal_model.h); the other commands refuse them.
bool is_temporal_model(const std::string& model);

// Declares the model options on `cmd`, bound to `flags` (which must outlive the parse).
void add_model_options(CLI::App* cmd, ModelFlags& flags);
// The configuration of static model flags.model from the flags (seed, overlap: the caller's).
nn::ModelConfig model_config(const ModelFlags& flags);
// Whether option `name` (without "--") was given on the command line or in --config.
bool option_given(const ModelFlags& flags, const std::string& name);
// "--heads has no effect with --model gcn (ignored)" for each model option given that flags.model does not
// use (temporal: every static model's own options, --edge-weight, --dropout, --recompute).
std::vector<std::string> unused_model_options(const ModelFlags& flags);
// UserError unless flags.model is a static (registered) model: `command` runs those only.
void require_static_model(const ModelFlags& flags, const char* command);

}  // namespace halogen::app
