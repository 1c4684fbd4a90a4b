#pragma once
// Row normalisation of node features (Kipf & Welling's preprocessing): each row is divided by its sum;
// rows summing to 0 are left unchanged. Row-local, so a shard can do it without communication.
#include <cstdint>
#include <vector>

namespace halogen::graph {

void row_normalize(std::vector<float>& features, int64_t rows, int64_t cols);

}  // namespace halogen::graph
