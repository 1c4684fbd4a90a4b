#include "dynamic/gconvgru.h"

#include "core/error.h"

namespace halogen::dynamic {

std::unique_ptr<TemporalModel> make_gconvgru(const TemporalModelConfig&, int64_t) {
  throw UserError("the GConvGRU model is not built yet");
}

}  // namespace halogen::dynamic
