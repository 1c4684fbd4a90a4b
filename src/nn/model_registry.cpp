// The model registry (nn/model_registry.h): the list of models, option values as text, and the spec of a
// layer-stack model (nn::Model).
#include "nn/model_registry.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "core/format.h"

namespace halogen::nn {

const std::vector<ModelSpec>& model_specs() {
  // One line per model: adding a model is its file under nn/models/ and its line here.
  static const std::vector<ModelSpec> specs = {gcn_model(), sage_model(), gin_model(), appnp_model(), gat_model(),
                                              gcnii_model()};
  return specs;
}

std::string model_names() {
  std::string names;
  for (const ModelSpec& spec : model_specs()) names += (names.empty() ? "" : ", ") + spec.name;
  return names;
}

const ModelSpec& model_spec(const std::string& name, const char* option) {
  const std::string wanted = name;
  for (const ModelSpec& spec : model_specs())
    if (spec.name == wanted) return spec;
  throw UserError(strformat("%s %s: not a static model (one of %s)", option, name.c_str(), model_names().c_str()));
}

ModelConfig default_model_config(const std::string& name) {
  ModelConfig config;
  config.name = model_spec(name).name;
  for (const ModelOption& option : model_spec(name).options) option.set(config, option.get(config));
  return config;
}

std::string option_text(const OptionValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return strformat("%lld", static_cast<long long>(*i));
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  const float f = std::get<float>(value);
  for (int digits = 6; digits <= 9; ++digits) {  // the shortest text that reads back to the same float
    const std::string text = strformat("%.*g", digits, static_cast<double>(f));
    if (std::strtof(text.c_str(), nullptr) == f) return text;
  }
  return strformat("%.9g", static_cast<double>(f));
}

bool option_in_range(const ModelOption& option, const OptionValue& value) {
  switch (option.type) {
    case ModelOption::Type::integer: {
      const auto* i = std::get_if<int64_t>(&value);
      return i != nullptr && static_cast<double>(*i) >= option.min && static_cast<double>(*i) <= option.max;
    }
    case ModelOption::Type::real: {
      const auto* f = std::get_if<float>(&value);
      return f != nullptr && std::isfinite(*f) && *f >= option.min &&
             (option.max_open ? *f < option.max : *f <= option.max);
    }
    case ModelOption::Type::flag:
      return std::holds_alternative<bool>(value);
    case ModelOption::Type::choice: {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) return false;
      for (const std::string& choice : option.choices)
        if (*s == choice) return true;
      return false;
    }
  }
  return false;
}

std::optional<OptionValue> read_option(const ModelOption& option, const std::string& text) {
  OptionValue value;
  const char* begin = text.c_str();
  char* end = const_cast<char*>(begin) + text.size();
  switch (option.type) {
    case ModelOption::Type::integer:
      value = static_cast<int64_t>(std::strtoll(begin, &end, 10));
      break;
    case ModelOption::Type::real:
      value = std::strtof(begin, &end);
      break;
    case ModelOption::Type::flag:
      if (text != "true" && text != "false" && text != "1" && text != "0") return std::nullopt;
      value = text == "true" || text == "1";
      break;
    case ModelOption::Type::choice:
      value = text;
      break;
  }
  if (text.empty() || end != begin + text.size() || !option_in_range(option, value)) return std::nullopt;
  return value;
}

std::string option_expects(const ModelOption& option) {
  switch (option.type) {
    case ModelOption::Type::integer:
      return strformat("an integer in [%lld, %lld]", static_cast<long long>(option.min),
                       static_cast<long long>(option.max));
    case ModelOption::Type::real:
      return strformat("a finite number in [%g, %g%s", option.min, option.max, option.max_open ? ")" : "]");
    case ModelOption::Type::flag:
      return "true or false";
    case ModelOption::Type::choice:
      break;
  }
  std::string choices;
  for (const std::string& choice : option.choices) choices += (choices.empty() ? "" : " or ") + choice;
  return choices;
}

OptionValue parse_option(const ModelOption& option, const std::string& text, const std::string& where) {
  const std::optional<OptionValue> value = read_option(option, text);
  HALOGEN_USER_CHECK(value.has_value(), "%s: --%s %s: expected %s", where.c_str(), option.name.c_str(), text.c_str(),
                     option_expects(option).c_str());
  return *value;
}

namespace {

ModelOption make_option(std::string name, std::string key, std::string help, ModelOption::Type type, OptionGet get,
                        OptionSet set) {
  ModelOption option;
  option.name = std::move(name);
  option.key = std::move(key);
  option.help = std::move(help);
  option.type = type;
  option.get = std::move(get);
  option.set = std::move(set);
  return option;
}

}  // namespace

ModelOption integer_option(std::string name, std::string key, std::string help, int64_t min, int64_t max,
                           OptionGet get, OptionSet set) {
  ModelOption option = make_option(std::move(name), std::move(key), std::move(help), ModelOption::Type::integer,
                                   std::move(get), std::move(set));
  option.min = static_cast<double>(min);
  option.max = static_cast<double>(max);
  return option;
}

ModelOption real_option(std::string name, std::string key, std::string help, double min, double max, bool max_open,
                        OptionGet get, OptionSet set) {
  ModelOption option = make_option(std::move(name), std::move(key), std::move(help), ModelOption::Type::real,
                                   std::move(get), std::move(set));
  option.min = min;
  option.max = max;
  option.max_open = max_open;
  return option;
}

ModelOption flag_option(std::string name, std::string key, std::string help, OptionGet get, OptionSet set) {
  return make_option(std::move(name), std::move(key), std::move(help), ModelOption::Type::flag, std::move(get),
                     std::move(set));
}

ModelOption choice_option(std::string name, std::string key, std::string help, std::vector<std::string> choices,
                          OptionGet get, OptionSet set) {
  ModelOption option = make_option(std::move(name), std::move(key), std::move(help), ModelOption::Type::choice,
                                   std::move(get), std::move(set));
  option.choices = std::move(choices);
  return option;
}

void require_precision_supported(const ModelConfig& config) {
  const ModelSpec& spec = model_spec(config);
  if (!config.bf16 || spec.supports_bf16) return;
  std::string supported;
  for (const ModelSpec& other : model_specs())
    if (other.supports_bf16) supported += (supported.empty() ? "" : ", ") + other.name;
  throw UserError("--precision bf16 is not supported by --model " + spec.name + " yet (models with it: " + supported +
                  ")");
}

std::string model_summary(const ModelConfig& config) {
  return model_spec(config).summary(config) + (config.bf16 ? ", precision bf16" : "");
}

ModelSpec layer_stack_spec(ConvKind kind, std::string description, bool recompute) {
  ModelSpec spec;
  spec.name = conv_kind_name(kind);
  spec.description = std::move(description);
  spec.uses_recompute = recompute;
  spec.supports_bf16 = true;
  // The layer kind is the spec's, whatever the configuration says (a configuration names its model by name).
  auto with_kind = [kind](ModelConfig config) {
    config.kind = kind;
    return config;
  };
  spec.build = [with_kind](const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard,
                           graph::Shard* release, Device device) -> std::unique_ptr<NodeModel> {
    if (release != nullptr) return std::make_unique<Model>(with_kind(config), comm, std::move(*release), device);
    return std::make_unique<Model>(with_kind(config), comm, shard, device);
  };
  spec.estimate = [with_kind](const ModelConfig& config, const RankShape& shape) {
    return Model::estimate_breakdown(with_kind(config), shape);
  };
  spec.parameter_count = [with_kind](const ModelConfig& config, int64_t num_features, int64_t num_classes) {
    return Model::parameter_count(with_kind(config), num_features, num_classes);
  };
  spec.summary = [](const ModelConfig&) { return std::string(); };
  return spec;
}

}  // namespace halogen::nn
