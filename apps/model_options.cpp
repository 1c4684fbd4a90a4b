// The model options of the command line (apps/model_options.h): one table, from the model registry.
#include "apps/model_options.h"

#include <algorithm>

#include "apps/cli_checks.h"
#include "core/error.h"
#include "core/format.h"
#include "nn/temporal_registry.h"

namespace halogen::app {
namespace {

// CLI11's check of a registered option: "value 0 must be an integer in [1, 1024]".
CLI::Validator registry_check(const nn::ModelOption& option) {
  const std::string expects = nn::option_expects(option);
  return CLI::Validator(
      [option, expects](std::string& text) -> std::string {
        return nn::read_option(option, text).has_value() ? std::string() : "value " + text + " must be " + expects;
      },
      option.type == nn::ModelOption::Type::choice ? "{" + CLI::detail::join(option.choices, ",") + "}"
                                                   : expects.substr(expects.find('[')));
}

}  // namespace

bool is_temporal_model(const std::string& model) { return nn::is_temporal_model_name(model); }

void add_model_options(CLI::App* cmd, ModelFlags& flags) {
  flags.command = cmd;
  std::string help;
  std::vector<std::string> names;
  for (const nn::ModelSpec& spec : nn::model_specs()) {
    help += (help.empty() ? "" : ", ") + spec.name + " (" + spec.description + ")";
    names.push_back(spec.name);
  }
  help += "; on dynamic graphs (train only)";
  for (const nn::TemporalSpec& spec : nn::temporal_specs()) {
    help += (spec.name == nn::temporal_specs().front().name ? " " : ", ") + spec.name + " (" + spec.description + ")";
    names.push_back(spec.name);
  }
  cmd->add_option("--model", flags.model, help)->check(CLI::IsMember(names))->capture_default_str();
  cmd->add_option("--layers", flags.layers,
                  "Number of graph convolution layers (temporal models: 1; used by evolvegcn-o)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--hidden", flags.hidden, "Hidden width (temporal models: 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--dropout", flags.dropout, "Dropout probability on every layer's input, in [0, 1)")
      ->check(finite_interval(0.0, 1.0))->capture_default_str();
  cmd->add_flag("--edge-weight", flags.edge_weight,
                "Use the graph's edge weights (/csr/weight) in GCN/APPNP normalisation, SAGE's mean and GIN's sum "
                "(default: off, every edge weighs 1)");
  cmd->add_flag("--recompute", flags.recompute,
                "gcn/sage/gin: hidden layers that aggregate first recompute A X in the backward instead of keeping "
                "it (less memory, one more local SpMM per such layer; same results)");
  cmd->add_option("--precision", flags.precision,
                  "fp32, or bf16 (gcn, sage, gin, appnp, gat): dense features and every matrix multiplied by the "
                  "adjacency held in BF16 (halo messages and SpMM gathers half the bytes), and A X kept for the "
                  "backward; products accumulated in FP32; parameters, gradients and optimizer state stay FP32")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  // Each model's own options, in registry order; an option two models share is declared once.
  for (const nn::ModelSpec& spec : nn::model_specs()) {
    const nn::ModelConfig defaults = nn::default_model_config(spec.name);
    for (const nn::ModelOption& option : spec.options) {
      const std::string flag = "--" + option.name;
      if (cmd->get_option_no_throw(flag) != nullptr) continue;
      if (option.type == nn::ModelOption::Type::flag) {
        flags.flags[option.name] = std::get<bool>(option.get(defaults));
        cmd->add_flag(flag, flags.flags[option.name], option.help);
        continue;
      }
      flags.values[option.name] = nn::option_text(option.get(defaults));
      cmd->add_option(flag, flags.values[option.name], option.help)
          ->type_name(option.type == nn::ModelOption::Type::integer ? "INT"
                      : option.type == nn::ModelOption::Type::real  ? "FLOAT"
                                                                    : "TEXT")
          ->check(registry_check(option))
          ->capture_default_str();
    }
  }
}

bool option_given(const ModelFlags& flags, const std::string& name) {
  return flags.command != nullptr && flags.command->count("--" + name) > 0;
}

void require_static_model(const ModelFlags& flags, const char* command) {
  HALOGEN_USER_CHECK(!is_temporal_model(flags.model),
                     "%s: --model %s is a temporal model, which only `halogen train` runs (static models: %s)",
                     command, flags.model.c_str(), nn::model_names().c_str());
}

nn::ModelConfig model_config(const ModelFlags& flags) {
  const nn::ModelSpec& spec = nn::model_spec(flags.model);
  nn::ModelConfig config = nn::default_model_config(spec.name);
  config.layers = flags.layers;
  config.hidden = flags.hidden;
  config.dropout = flags.dropout;
  config.edge_weight = flags.edge_weight;
  config.recompute = flags.recompute;
  config.bf16 = flags.precision == "bf16";
  nn::require_precision_supported(config);
  for (const nn::ModelOption& option : spec.options) {
    if (option.type == nn::ModelOption::Type::flag) {
      option.set(config, flags.flags.at(option.name));
      continue;
    }
    option.set(config, nn::parse_option(option, flags.values.at(option.name), "--model " + spec.name));
  }
  return config;
}

std::vector<std::string> unused_model_options(const ModelFlags& flags) {
  const bool temporal = is_temporal_model(flags.model);
  const nn::ModelSpec* spec = temporal ? nullptr : &nn::model_spec(flags.model);
  std::vector<std::string> unused;
  auto note = [&](const std::string& name) {
    unused.push_back("--" + name + " has no effect with --model " + flags.model + " (ignored)");
  };
  // Every registered option once (add_model_options declares a shared name once), unless flags.model has it.
  std::vector<std::string> seen;
  for (const nn::ModelSpec& other : nn::model_specs())
    for (const nn::ModelOption& option : other.options) {
      if (std::find(seen.begin(), seen.end(), option.name) != seen.end()) continue;
      seen.push_back(option.name);
      const bool used = spec != nullptr && std::any_of(spec->options.begin(), spec->options.end(),
                                                       [&](const nn::ModelOption& o) { return o.name == option.name; });
      if (!used && option_given(flags, option.name)) note(option.name);
    }
  if (temporal && option_given(flags, "edge-weight")) note("edge-weight");
  if ((temporal || !spec->uses_recompute) && option_given(flags, "recompute")) note("recompute");
  if (temporal && option_given(flags, "dropout")) note("dropout");
  if (flags.precision == "bf16" && option_given(flags, "recompute") && !temporal && spec->uses_recompute)
    unused.push_back("--recompute has no effect with --precision bf16 (ignored)");
  return unused;
}

}  // namespace halogen::app
