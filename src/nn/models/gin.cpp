// GIN (Xu et al., ICLR 2019): a 2-layer MLP of (1 + eps) x + sum of neighbours per layer (nn/graph_conv.h);
// eps = 0 (GIN-0) or learned (--gin-eps-learn).
#include "nn/model_registry.h"

namespace halogen::nn {

ModelSpec gin_model() {
  ModelSpec spec = layer_stack_spec(ConvKind::gin, "Xu et al.");
  spec.uses_recompute = true;
  ModelOption eps;
  eps.name = "gin-eps-learn";
  eps.key = "gin_eps_learn";
  eps.help = "GIN: learn epsilon of (1 + eps) x_i per layer (default: off, eps = 0)";
  eps.type = ModelOption::Type::flag;
  eps.get = [](const ModelConfig& c) -> OptionValue { return c.gin_learn_eps; };
  eps.set = [](ModelConfig& c, const OptionValue& v) { c.gin_learn_eps = std::get<bool>(v); };
  spec.options = {eps};
  spec.summary = [](const ModelConfig& c) { return std::string(c.gin_learn_eps ? ", learnable eps" : ", eps 0"); };
  return spec;
}

}  // namespace halogen::nn
