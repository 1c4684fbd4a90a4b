// libFuzzer target: io::convert_ogb_to_file on a directory built from one input (into a scratch graph file,
// with the smallest memory limit, so the stashes spill to scratch files too). The input is split at lines
// "==" into raw/num-node-list.csv, raw/num-edge-list.csv, raw/edge.csv, raw/node-feat.csv, raw/node-label.csv
// and split/s/{train,valid,test}.csv, in that order; parts beyond the input are absent files. A UserError is
// the expected answer to bad input; anything else is a finding.
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "fuzz_input.h"
#include "io/convert.h"
#include "io/convert_chunked.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  halogen::fuzz::fix_available_memory();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const files[] = {"raw/num-node-list.csv", "raw/num-edge-list.csv", "raw/edge.csv",
                                      "raw/node-feat.csv",     "raw/node-label.csv",    "split/s/train.csv",
                                      "split/s/valid.csv",     "split/s/test.csv"};
  const std::string dir = halogen::fuzz::scratch_dir() + "/ogb";
  std::filesystem::remove_all(dir);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t begin = 0;
  for (const char* name : files) {
    if (begin > input.size()) break;
    size_t end = input.find("\n==\n", begin);
    if (end == std::string_view::npos) end = input.size();
    halogen::fuzz::write_file(std::string("ogb/") + name, data + begin, end - begin);
    begin = end + 4;
  }
  halogen::io::ConvertOptions options;
  options.input = dir;
  options.memory_limit_bytes = halogen::io::kMinimumConvertLimitBytes;
  try {
    (void)halogen::io::convert_ogb_to_file(options, halogen::fuzz::scratch_dir() + "/ogb.h5");
  } catch (const halogen::UserError&) {
  }
  return 0;
}
