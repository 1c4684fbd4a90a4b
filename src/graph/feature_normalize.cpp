#include "graph/feature_normalize.h"

#include "core/error.h"

namespace halogen::graph {

void row_normalize(std::vector<float>& features, int64_t rows, int64_t cols) {
  HALOGEN_ASSERT(static_cast<int64_t>(features.size()) == rows * cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    float* row = features.data() + r * cols;
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += row[c];
    if (sum == 0) continue;
    const double inverse = 1.0 / sum;
    for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(row[c] * inverse);
  }
}

}  // namespace halogen::graph
