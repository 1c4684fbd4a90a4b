// GraphSAGE-mean (Hamilton et al., NeurIPS 2017): Z = X W_self + M X W_neigh + b per layer (nn/graph_conv.h).
#include "nn/model_registry.h"

namespace halogen::nn {

ModelSpec sage_model() { return layer_stack_spec(ConvKind::sage, "GraphSAGE-mean", /*recompute=*/true); }

}  // namespace halogen::nn
