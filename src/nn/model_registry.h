#pragma once
// The model registry: every static node-classification model is one ModelSpec, made in its own file under
// nn/models/ and listed once in model_registry.cpp. A spec says everything the commands need to know of its
// model, so that no command names a model:
//   - its name (--model NAME), a one-line description, and its own options with their validators (the
//     command-line option table of `train`, `bench epoch`, `info`, `plan` and `--config`: apps/model_options.h;
//     the checkpoint keys `predict` reads back);
//   - how it builds its network on a rank (a NodeModel), its memory and parameter count for `info` and `plan`;
//   - its training defaults (learning rate, weight decays, epochs, patience) where they differ from train's;
//   - which weight decay applies to which of its parameter layers.
// The options every static model shares (--layers, --hidden, --dropout, --edge-weight, --recompute) are
// ModelConfig fields; a model's own options live in ModelConfig fields of the built-in models, or, for a model
// added later, in ModelConfig::values by name (a new model touches no shared file).
//
// Option values travel as OptionValue: integer (int64_t), real (float), flag (bool) or choice (std::string).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/model.h"
#include "nn/node_model.h"

namespace halogen::nn {

struct ModelOption {
  enum class Type { integer, real, flag, choice };
  std::string name;  // the command-line name without "--": "heads", "appnp-k"
  std::string key;   // the RunOptions / checkpoint key: "heads", "appnp_k"
  std::string help;
  Type type = Type::integer;
  double min = 0.0, max = 0.0;  // integer: [min, max]; real: [min, max], or [min, max) when max_open
  bool max_open = false;
  std::vector<std::string> choices;  // choice
  // Written by checkpoints since their format's first version: a checkpoint without it is refused. Else (an
  // option added later) a checkpoint without it reads the default.
  bool required_in_checkpoint = true;
  std::function<OptionValue(const ModelConfig&)> get;
  std::function<void(ModelConfig&, const OptionValue&)> set;
};

// Training options a model sets other defaults for (unset: train's own default).
struct TrainingDefaults {
  std::optional<float> lr, weight_decay;
  std::optional<int64_t> epochs, patience;
  std::optional<std::string> best_by;  // "acc" | "loss" (train --best-by)
};

struct ModelSpec {
  std::string name;         // --model NAME
  std::string description;  // for --model's help: "Kipf & Welling"
  std::vector<ModelOption> options;  // the model's own options, in --help order
  bool uses_recompute = false;       // --recompute changes its memory
  bool supports_bf16 = false;        // --precision bf16 (ModelConfig::bf16) is implemented
  TrainingDefaults defaults;
  // The weight decay of each parameter layer (ParameterInfo::layer; missing layers: 0), given train's
  // --weight-decay and --weight-decay-all-layers. Unset: --weight-decay on layer 0, or on every layer.
  std::function<std::vector<float>(const ModelConfig&, int parameter_layers, float weight_decay, bool all_layers)>
      weight_decay;
  std::string weight_decay_scope = "first layer";  // where --weight-decay applies, for the model line
  // The network on one rank (nn/node_model.h). `release`: nullptr, or the shard itself, whose arrays the model
  // may empty once copied.
  std::function<std::unique_ptr<NodeModel>(const ModelConfig&, comm::Communicator&, const graph::Shard&,
                                           graph::Shard* release, Device)>
      build;
  // Bytes a rank of this shape allocates, by what holds them (optimizer 0), and trainable floats.
  std::function<MemoryBreakdown(const ModelConfig&, const RankShape&)> estimate;
  std::function<int64_t(const ModelConfig&, int64_t num_features, int64_t num_classes)> parameter_count;
  // ", K 10, alpha 0.1": the model's options for the one-line model description of `train` and `info`.
  std::function<std::string(const ModelConfig&)> summary;
};

// Every registered model, in --model help order.
const std::vector<ModelSpec>& model_specs();
// The spec named `name`; UserError naming `option` (and the names) for another name.
const ModelSpec& model_spec(const std::string& name, const char* option = "--model");
// The spec of a configuration (ModelConfig::name; empty: the layer stack of its kind).
inline const ModelSpec& model_spec(const ModelConfig& config) {
  return model_spec(config.name.empty() ? std::string(conv_kind_name(config.kind)) : config.name);
}
// UserError when config.bf16 and its model does not support --precision bf16 (naming the models that do).
void require_precision_supported(const ModelConfig& config);
// The model's options for its one-line description (spec.summary), and ", precision bf16" under bf16.
std::string model_summary(const ModelConfig& config);
// "gcn, sage, gin, appnp, gat, gcnii" (for messages).
std::string model_names();
// A configuration of model `name` with every option at its default (ModelConfig's).
ModelConfig default_model_config(const std::string& name);

// Option values as text and back: "8", "0.6" (the shortest text of the float), "true"/"false", "original".
std::string option_text(const OptionValue& value);
// `text` as `option`'s type within its range or choices, else nothing; what it expects ("an integer in [1,
// 1024]", "original or pyg").
std::optional<OptionValue> read_option(const ModelOption& option, const std::string& text);
std::string option_expects(const ModelOption& option);
// `text` as `option`'s type, checked against its range or choices; UserError naming `where` otherwise.
OptionValue parse_option(const ModelOption& option, const std::string& text, const std::string& where);
// Whether `value` is within `option`'s range or choices (a value from a file rather than a command line).
bool option_in_range(const ModelOption& option, const OptionValue& value);

// Options of each type, for the models' files: name, key, help, then the range or choices, then get and set.
using OptionGet = std::function<OptionValue(const ModelConfig&)>;
using OptionSet = std::function<void(ModelConfig&, const OptionValue&)>;
ModelOption integer_option(std::string name, std::string key, std::string help, int64_t min, int64_t max,
                           OptionGet get, OptionSet set);
// [min, max], or [min, max) when `max_open`.
ModelOption real_option(std::string name, std::string key, std::string help, double min, double max, bool max_open,
                        OptionGet get, OptionSet set);
ModelOption flag_option(std::string name, std::string key, std::string help, OptionGet get, OptionSet set);
ModelOption choice_option(std::string name, std::string key, std::string help, std::vector<std::string> choices,
                          OptionGet get, OptionSet set);
// A model built by nn::Model with layer kind `kind`: build, estimate, parameter count; `recompute`: --recompute
// changes its memory.
ModelSpec layer_stack_spec(ConvKind kind, std::string description, bool recompute = false);

// The built-in models' specs (nn/models/<name>.cpp).
ModelSpec gcn_model();
ModelSpec sage_model();
ModelSpec gin_model();
ModelSpec appnp_model();
ModelSpec gat_model();
ModelSpec gcnii_model();

}  // namespace halogen::nn
