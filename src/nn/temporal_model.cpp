#include "nn/temporal_model.h"

#include <algorithm>

#include "core/error.h"
#include "nn/evolvegcn_o.h"
#include "nn/gconvgru.h"
#include "nn/tgcn.h"

namespace halogen::nn {

TemporalKind parse_temporal_kind(const std::string& name) {
  if (name == "evolvegcn-o") return TemporalKind::evolvegcn_o;
  if (name == "tgcn") return TemporalKind::tgcn;
  if (name == "gconvgru") return TemporalKind::gconvgru;
  throw UserError("unknown temporal model '" + name + "' (expected evolvegcn-o, tgcn or gconvgru)");
}

const char* temporal_kind_name(TemporalKind kind) {
  switch (kind) {
    case TemporalKind::evolvegcn_o: return "evolvegcn-o";
    case TemporalKind::tgcn: return "tgcn";
    case TemporalKind::gconvgru: return "gconvgru";
  }
  return "?";
}

graph::Normalization temporal_normalization(TemporalKind kind) {
  return kind == TemporalKind::gconvgru ? graph::Normalization::chebyshev : graph::Normalization::gcn;
}

int64_t temporal_max_width(const TemporalModelConfig& config) { return std::max(config.in, config.hidden); }

std::unique_ptr<TemporalModel> make_temporal_model(const TemporalModelConfig& config, int64_t num_owned) {
  HALOGEN_ASSERT(config.in >= 1 && config.hidden >= 1 && config.out >= 1 && config.max_window >= 1);
  switch (config.kind) {
    case TemporalKind::evolvegcn_o: return make_evolvegcn_o(config, num_owned);
    case TemporalKind::tgcn: return make_tgcn(config, num_owned);
    case TemporalKind::gconvgru: return make_gconvgru(config, num_owned);
  }
  HALOGEN_ASSERT(false, "unknown kind");
  return nullptr;
}

}  // namespace halogen::nn
