#include "io/declared_sizes.h"

#include <algorithm>

#include "core/error.h"
#include "core/format.h"
#include "core/memory.h"

namespace halogen::io {

int64_t csr_build_bytes(int64_t num_nodes, int64_t num_edges) {
  // 2 offset arrays of N+1 int64, the input list (2 x int64 + float per edge) and the symmetrised CSR
  // (int64 index + float weight per stored edge, 2 per input edge).
  const int64_t offsets = saturating_bytes(num_nodes + 1, 2 * 8);
  const int64_t edges = saturating_bytes(num_edges, 2 * 8 + 4 + 2 * (8 + 4));
  return offsets > INT64_MAX - edges ? INT64_MAX : offsets + edges;
}

void check_isolated_vertices(const std::string& where, const std::string& field, int64_t num_nodes,
                             int64_t num_edges) {
  const int64_t endpoints = saturating_bytes(num_edges, 2);
  HALOGEN_USER_CHECK(num_nodes - std::min(num_nodes, endpoints) <= kMaxIsolatedVertices,
                     "%s%s declares %lld vertices, but its %lld edges touch at most %lld of them; more than "
                     "%lld isolated vertices are taken for a corrupt size",
                     where.c_str(), field.c_str(), static_cast<long long>(num_nodes),
                     static_cast<long long>(num_edges), static_cast<long long>(endpoints),
                     static_cast<long long>(kMaxIsolatedVertices));
}

void check_declared_graph(const std::string& where, const std::string& field, int64_t num_nodes,
                          int64_t num_edges) {
  check_isolated_vertices(where, field, num_nodes, num_edges);
  check_memory_fits(csr_build_bytes(num_nodes, num_edges),
                    strformat("%sa graph of %lld vertices and %lld edges", where.c_str(),
                              static_cast<long long>(num_nodes), static_cast<long long>(num_edges)));
}

int64_t reserve_hint(int64_t declared, int64_t file_bytes) {
  return std::max<int64_t>(0, std::min(declared, file_bytes));
}

}  // namespace halogen::io
