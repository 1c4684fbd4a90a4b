#pragma once
// Helper of the PyTorch Geometric Temporal JSON converter tests (dynamic_covid_convert_test,
// dynamic_pgt_layouts_test, dynamic_pgt_preprocess_test).
#include <string>

#include "io/temporal.h"

namespace halogen::test {

// `halogen convert --format pgt-json PATH --preprocess PREPROCESS [--directed]`, in memory.
inline graph::Graph convert_pgt(const std::string& path, const std::string& preprocess, bool directed = false) {
  io::ConvertOptions options;
  options.input = path;
  options.directed = directed;
  options.preprocess = preprocess;
  return io::convert_pgt_json(options);
}

}  // namespace halogen::test
