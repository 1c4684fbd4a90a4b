// libFuzzer targets fuzz_mtx and fuzz_snap (built with HALOGEN_FUZZ_SNAP): io::convert_matrix_market, or
// io::convert_snap, on one input file, directed when the input's size is even. A UserError is the expected
// answer to bad input; a crash, a sanitizer report or any other exception is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/convert.h"

namespace {
#ifdef HALOGEN_FUZZ_SNAP
constexpr const char* kInputName = "input.txt";
const auto& convert = halogen::io::convert_snap;
#else
constexpr const char* kInputName = "input.mtx";
const auto& convert = halogen::io::convert_matrix_market;
#endif
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  halogen::io::ConvertOptions options;
  options.input = halogen::fuzz::write_file(kInputName, data, size);
  options.directed = size % 2 == 0;
  try {
    (void)convert(options);
  } catch (const halogen::UserError&) {
  }
  return 0;
}
