#pragma once
// Sizes an input declares (a Matrix Market size line, OGB's num-node-list and num-edge-list, an npy shape)
// are checked before anything of that size is allocated: a corrupt or hostile header must end in one
// UserError, not in a 6 GB peak, std::bad_alloc or a 2 GiB output file.
#include <cstdint>
#include <string>

namespace halogen::io {

// More isolated vertices than this (vertices beyond the 2 endpoints of each declared edge) are taken for a
// corrupt size: 2^24 isolated vertices already cost 128 MiB of CSR offsets and carry no information.
constexpr int64_t kMaxIsolatedVertices = int64_t{1} << 24;

// UserError "<where><field> declares N vertices, but its E edges touch at most 2E of them; ..." when
// num_nodes exceeds 2 * num_edges + kMaxIsolatedVertices. `where` ends with ": " ("FILE: line N: " of a
// LineReader, or "PATH: ").
void check_isolated_vertices(const std::string& where, const std::string& field, int64_t num_nodes,
                             int64_t num_edges);

// check_isolated_vertices, then check_memory_fits for the CSR build of N vertices and E edges (the
// converters that build the graph in memory).
void check_declared_graph(const std::string& where, const std::string& field, int64_t num_nodes,
                          int64_t num_edges);

// Bytes build_csr and the graph file writer hold at their peak for N vertices and E input edges (symmetrised,
// weighted or not): offsets twice, the edge list, and the CSR's indices and weights.
int64_t csr_build_bytes(int64_t num_nodes, int64_t num_edges);

// Elements worth reserving for a count a header declares: at most one per byte of the file (no text format
// stores an element in less), so a header claiming 10^12 entries costs nothing before they are read.
int64_t reserve_hint(int64_t declared, int64_t file_bytes);

}  // namespace halogen::io
