#include "dynamic/tgcn.h"

#include "core/error.h"

namespace halogen::dynamic {

std::unique_ptr<TemporalModel> make_tgcn(const TemporalModelConfig&, int64_t) {
  throw UserError("the T-GCN model is not built yet");
}

}  // namespace halogen::dynamic
