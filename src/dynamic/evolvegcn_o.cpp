#include "dynamic/evolvegcn_o.h"

#include "core/error.h"

namespace halogen::dynamic {

std::unique_ptr<TemporalModel> make_evolvegcn_o(const TemporalModelConfig&, int64_t) {
  throw UserError("the EvolveGCN-O model is not built yet");
}

}  // namespace halogen::dynamic
