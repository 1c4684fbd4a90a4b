#include "core/build_info.h"

#include "halogen_build_info.h"  // generated: ${build}/generated (cmake/BuildInfo.cmake)

namespace halogen {

const char* build_version() {
  return HALOGEN_VERSION_STRING;
}
const char* build_commit() {
  return HALOGEN_COMMIT_STRING;
}

}  // namespace halogen
