// libFuzzer target: io::LineReader (plain or gzip) with split_tokens and the number parsers on every token.
// A UserError is the expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception) is a finding.
#include <cstdint>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/text_reader.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = halogen::fuzz::write_file("input.txt", data, size);
  try {
    halogen::io::LineReader reader(path);
    std::vector<std::string_view> tokens;
    std::string_view line;
    while (reader.next(&line)) {
      halogen::io::split_tokens(line, line.size() % 2 == 0 ? ',' : ' ', &tokens);
      for (size_t c = 0; c < tokens.size(); ++c) {
        try {
          (void)halogen::io::parse_int64(tokens[c], reader, c);
        } catch (const halogen::UserError&) {
        }
        try {
          (void)halogen::io::parse_double(tokens[c], reader, c);
        } catch (const halogen::UserError&) {
        }
      }
    }
  } catch (const halogen::UserError&) {
  }
  return 0;
}
