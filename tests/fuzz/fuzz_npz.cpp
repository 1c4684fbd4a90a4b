// libFuzzer target: io::NpzArchive and NpyReader: every member is opened and read to its end as doubles (in
// blocks), as the OGB npz converter reads them. A UserError is the expected answer to bad input; anything
// else is a finding.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/npz.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = halogen::fuzz::write_file("data.npz", data, size);
  try {
    const halogen::io::NpzArchive archive(path);
    for (const std::string& name : archive.names()) {
      try {
        auto reader = archive.open(name);
        std::vector<double> block(4096);
        for (int64_t left = reader->header().count(); left > 0;) {
          const int64_t n = std::min<int64_t>(left, static_cast<int64_t>(block.size()));
          reader->read(block.data(), n);
          left -= n;
        }
      } catch (const halogen::UserError&) {
      }
    }
  } catch (const halogen::UserError&) {
  }
  return 0;
}
