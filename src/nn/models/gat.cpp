// GAT (Velickovic et al., ICLR 2018): multi-head graph attention (nn/gat_conv.h); hidden layers concatenate
// their heads, the output layer averages them. --edge-weight is refused (attention weighs the edges).
#include "nn/model_registry.h"

#include "core/format.h"

namespace halogen::nn {

ModelSpec gat_model() {
  ModelSpec spec = layer_stack_spec(ConvKind::gat, "Velickovic et al.");
  ModelOption placement = choice_option(
      "gat-dropout", "gat_dropout",
      "GAT: where --dropout applies. original (Velickovic et al.'s reference code): in each layer, an independent "
      "mask on the layer's input per head and one on its transformed features; pyg (PyG's GATConv example): on "
      "the model's input and after each hidden ELU, one mask for all heads",
      {"original", "pyg"},
      [](const ModelConfig& c) -> OptionValue { return std::string(gat_dropout_name(c.gat_per_head_dropout)); },
      [](ModelConfig& c, const OptionValue& v) { c.gat_per_head_dropout = std::get<std::string>(v) != "pyg"; });
  placement.required_in_checkpoint = false;  // absent before it was an option: evaluation is the same either way
  spec.options = {
      integer_option("heads", "heads",
                     "GAT: attention heads of each hidden layer, concatenated (--hidden is the width per head)", 1,
                     1024, [](const ModelConfig& c) -> OptionValue { return int64_t{c.gat_heads}; },
                     [](ModelConfig& c, const OptionValue& v) { c.gat_heads = static_cast<int>(std::get<int64_t>(v)); }),
      integer_option("output-heads", "output_heads", "GAT: attention heads of the output layer, averaged", 1, 1024,
                     [](const ModelConfig& c) -> OptionValue { return int64_t{c.gat_output_heads}; },
                     [](ModelConfig& c, const OptionValue& v) {
                       c.gat_output_heads = static_cast<int>(std::get<int64_t>(v));
                     }),
      real_option("attention-dropout", "attention_dropout",
                  "GAT: dropout probability on the attention coefficients, in [0, 1)", 0.0, 1.0, /*max_open=*/true,
                  [](const ModelConfig& c) -> OptionValue { return c.attention_dropout; },
                  [](ModelConfig& c, const OptionValue& v) { c.attention_dropout = std::get<float>(v); }),
      placement};
  spec.summary = [](const ModelConfig& c) {
    return strformat(", %d heads (output %d), attention dropout %g, %s dropout", c.gat_heads, c.gat_output_heads,
                     c.attention_dropout, gat_dropout_name(c.gat_per_head_dropout));
  };
  return spec;
}

}  // namespace halogen::nn
