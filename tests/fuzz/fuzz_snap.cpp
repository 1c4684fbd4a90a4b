// libFuzzer target: io::convert_snap on one input file. A UserError is the expected answer to bad input; a
// crash, a sanitizer report or any other exception is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/convert.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  halogen::io::ConvertOptions options;
  options.input = halogen::fuzz::write_file("input.txt", data, size);
  options.directed = size % 2 == 0;
  try {
    (void)halogen::io::convert_snap(options);
  } catch (const halogen::UserError&) {
  }
  return 0;
}
