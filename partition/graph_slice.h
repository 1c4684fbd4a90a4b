#pragma once
// One process's share of a graph file when K processes read it together (`--method ptscotch`): a contiguous
// range of vertices and their rows of /csr, read by hyperslab so that no process holds the whole graph. Every
// count here is int64: a graph may hold more than 2^31 entries, and a slice's entries start past 2^31.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace halogen::h5 {
class File;
}

namespace halogen::partition {

// Vertex boundaries of `num_slices` contiguous slices balancing rows + stored entries: slice r is vertices
// [bounds[r], bounds[r+1]), bounds[0] = 0, bounds[K] = num_nodes, non-decreasing. bounds[r] (0 < r < K) is the
// first vertex v with indptr_at(v) + v >= r * (num_entries + num_nodes) / K, found by binary search, so only
// O(K log N) values of indptr are read (indptr_at(v) returns indptr[v], 0 <= v <= num_nodes; it must be
// non-decreasing with indptr_at(num_nodes) == num_entries).
std::vector<int64_t> balanced_vertex_slices(int64_t num_nodes, int64_t num_entries, int32_t num_slices,
                                            const std::function<int64_t(int64_t)>& indptr_at);

// The slice holding vertex v (0 <= v < num_nodes): the r with bounds[r] <= v < bounds[r+1].
int32_t slice_of_vertex(const std::vector<int64_t>& bounds, int64_t v);

// Rows [begin, end) of a graph file's /csr.
struct GraphSlice {
  int64_t begin = 0, end = 0;      // vertices [begin, end)
  std::vector<int64_t> indptr;     // (end-begin+1) global offsets into /csr/indices: indptr[0] = /csr/indptr[begin]
  std::vector<int64_t> indices;    // (indptr.back()-indptr[0]) global column ids of the rows, in file order
  std::vector<float> weight;       // (same) edge weights; empty when the graph is unweighted
  int64_t num_rows() const { return end - begin; }
  int64_t first_entry() const { return indptr.front(); }
  // Row i (0 <= i < num_rows) is entries [row_begin(i), row_end(i)) of indices/weight.
  int64_t row_begin(int64_t i) const { return indptr[i] - indptr.front(); }
  int64_t row_end(int64_t i) const { return indptr[i + 1] - indptr.front(); }
};

// Global degree of row i of the slice: its length without the self-loop.
int64_t slice_degree(const GraphSlice& slice, int64_t i);

// Reads rows [begin, end) of /csr (indptr[begin..end], then the entries between) and checks what read_graph
// checks of these rows: offsets non-decreasing and within [0, num_entries], columns in [0, num_nodes), sorted
// and without duplicates within a row. UserError naming the file, the dataset and the first bad index.
GraphSlice read_graph_slice(const h5::File& file, int64_t num_nodes, int64_t num_entries, int64_t begin,
                            int64_t end);

}  // namespace halogen::partition
