// GIN (Xu et al., ICLR 2019): a 2-layer MLP of (1 + eps) x + sum of neighbours per layer (nn/graph_conv.h);
// eps = 0 (GIN-0) or learned (--gin-eps-learn).
#include "nn/model_registry.h"

namespace halogen::nn {

ModelSpec gin_model() {
  ModelSpec spec = layer_stack_spec(ConvKind::gin, "Xu et al.", /*recompute=*/true);
  spec.options = {flag_option(
      "gin-eps-learn", "gin_eps_learn", "GIN: learn epsilon of (1 + eps) x_i per layer (default: off, eps = 0)",
      [](const ModelConfig& c) -> OptionValue { return c.gin_learn_eps; },
      [](ModelConfig& c, const OptionValue& v) { c.gin_learn_eps = std::get<bool>(v); })};
  spec.summary = [](const ModelConfig& c) { return std::string(c.gin_learn_eps ? ", learnable eps" : ", eps 0"); };
  return spec;
}

}  // namespace halogen::nn
