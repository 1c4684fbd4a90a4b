// libFuzzer targets fuzz_mtx and fuzz_snap (built with HALOGEN_FUZZ_SNAP): io::convert_matrix_market, or
// io::convert_snap_to_file (into a scratch graph file), on one input file, directed when the input's size is
// even. A UserError is the expected
// answer to bad input; a crash, a sanitizer report or any other exception is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/convert.h"
#include "io/convert_chunked.h"

namespace {
#ifdef HALOGEN_FUZZ_SNAP
constexpr const char* kInputName = "input.txt";
void convert(const halogen::io::ConvertOptions& options) {
  (void)halogen::io::convert_snap_to_file(options, halogen::fuzz::scratch_dir() + "/snap.h5");
}
#else
constexpr const char* kInputName = "input.mtx";
void convert(const halogen::io::ConvertOptions& options) {
  (void)halogen::io::convert_matrix_market(options);
}
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
  options.memory_limit_bytes = halogen::io::kMinimumConvertLimitBytes;
  try {
    convert(options);
  } catch (const halogen::UserError&) {
  }
  return 0;
}
