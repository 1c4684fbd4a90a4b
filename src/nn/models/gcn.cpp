// GCN (Kipf & Welling, ICLR 2017): Z = Â X W + b per layer (nn/graph_conv.h), relu and dropout between layers.
#include "nn/model_registry.h"

namespace halogen::nn {

ModelSpec gcn_model() { return layer_stack_spec(ConvKind::gcn, "Kipf & Welling", /*recompute=*/true); }

}  // namespace halogen::nn
