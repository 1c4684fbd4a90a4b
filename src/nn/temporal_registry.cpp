// The temporal model registry (nn/temporal_registry.h) and the lookups of nn/temporal_model.h through it.
#include "nn/temporal_registry.h"

#include <algorithm>

#include "core/error.h"

namespace halogen::nn {

const std::vector<TemporalSpec>& temporal_specs() {
  // One line per model: adding one is its cell's file and its line here.
  static const std::vector<TemporalSpec> specs = {evolvegcn_o_spec(), tgcn_spec(), gconvgru_spec()};
  return specs;
}

bool is_temporal_model_name(const std::string& name) {
  for (const TemporalSpec& spec : temporal_specs())
    if (spec.name == name) return true;
  return false;
}

const TemporalSpec& temporal_spec(const std::string& name) {
  for (const TemporalSpec& spec : temporal_specs())
    if (spec.name == name) return spec;
  std::string names;
  for (const TemporalSpec& spec : temporal_specs()) names += (names.empty() ? "" : ", ") + spec.name;
  throw UserError("unknown temporal model '" + name + "' (expected " + names + ")");
}

const TemporalSpec& temporal_spec(TemporalKind kind) {
  for (const TemporalSpec& spec : temporal_specs())
    if (spec.kind == kind) return spec;
  HALOGEN_ASSERT(false, "a temporal kind without a spec");
  return temporal_specs().front();
}

TemporalKind parse_temporal_kind(const std::string& name) { return temporal_spec(name).kind; }

const char* temporal_kind_name(TemporalKind kind) { return temporal_spec(kind).name.c_str(); }

graph::Normalization temporal_normalization(TemporalKind kind) { return temporal_spec(kind).normalization; }

int64_t temporal_max_width(const TemporalModelConfig& config) { return std::max(config.in, config.hidden); }

std::unique_ptr<TemporalModel> make_temporal_model(const TemporalModelConfig& config, int64_t num_owned) {
  HALOGEN_ASSERT(config.in >= 1 && config.hidden >= 1 && config.out >= 1 && config.max_window >= 1);
  return temporal_spec(config.kind).make(config, num_owned);
}

}  // namespace halogen::nn
