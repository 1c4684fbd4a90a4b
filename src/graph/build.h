#pragma once
// Edge list -> CSR: the one place where graphs are symmetrised, deduplicated and cleared of self-loops.
// Counting sort by source (O(E), parallel with OpenMP), then each row is sorted and deduplicated, so the
// result does not depend on the input order or the thread count.
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace halogen::graph {

// Directed edges src[i] -> dst[i] (weight[i] when `weight` is non-empty). Ids must be in [0, num_nodes).
struct EdgeList {
  std::vector<int64_t> src;
  std::vector<int64_t> dst;
  std::vector<float> weight;  // empty = unweighted

  int64_t size() const { return static_cast<int64_t>(src.size()); }
};

struct BuildOptions {
  bool symmetrize = true;       // store every edge in both directions
  bool drop_self_loops = true;  // remove (v, v)
};

// Builds a num_nodes x num_nodes CSR with sorted, duplicate-free rows. Duplicate (row, col) entries keep the
// largest weight, so a symmetrised weighted graph stays symmetric. Asserts that ids are in range (callers
// that read user files check first and report the line). Frees nothing of `edges`.
Csr build_csr(int64_t num_nodes, const EdgeList& edges, const BuildOptions& options = {});

// Same, but consumes `edges` (its memory is released as soon as possible: peak ~ edges + 1x CSR).
Csr build_csr(int64_t num_nodes, EdgeList&& edges, const BuildOptions& options = {});

// True when for every stored (r, c) the entry (c, r) is stored too. Rows must be sorted.
bool is_symmetric(const Csr& csr, int64_t* first_bad_row = nullptr, int64_t* first_bad_entry = nullptr);

}  // namespace halogen::graph
