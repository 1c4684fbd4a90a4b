// APPNP (Klicpera et al., ICLR 2019): an MLP of --layers linear layers, then K steps of personalised-PageRank
// propagation with teleport alpha (nn/model.h).
#include "nn/model_registry.h"

#include "core/format.h"

namespace halogen::nn {

ModelSpec appnp_model() {
  ModelSpec spec = layer_stack_spec(ConvKind::appnp, "Klicpera et al.");
  spec.options = {
      integer_option("appnp-k", "appnp_k", "APPNP: propagation steps K after the MLP (--layers linear layers)", 0,
                     1 << 20, [](const ModelConfig& c) -> OptionValue { return int64_t{c.appnp_k}; },
                     [](ModelConfig& c, const OptionValue& v) { c.appnp_k = static_cast<int>(std::get<int64_t>(v)); }),
      real_option("appnp-alpha", "appnp_alpha", "APPNP: teleport probability alpha", 0.0, 1.0, /*max_open=*/false,
                  [](const ModelConfig& c) -> OptionValue { return c.appnp_alpha; },
                  [](ModelConfig& c, const OptionValue& v) { c.appnp_alpha = std::get<float>(v); })};
  spec.summary = [](const ModelConfig& c) { return strformat(", K %d, alpha %g", c.appnp_k, c.appnp_alpha); };
  return spec;
}

}  // namespace halogen::nn
