// Vertex slices of a graph file (partition/graph_slice.h): their bounds, their rows read and checked.
#include "partition/graph_slice.h"

#include <algorithm>

#include "core/error.h"
#include "io/h5.h"

namespace halogen::partition {

std::vector<int64_t> balanced_vertex_slices(int64_t num_nodes, int64_t num_entries, int32_t num_slices,
                                            const std::function<int64_t(int64_t)>& indptr_at) {
  HALOGEN_ASSERT(num_slices >= 1 && num_nodes >= 0 && num_entries >= 0, "bad slice request");
  std::vector<int64_t> bounds(static_cast<size_t>(num_slices) + 1, num_nodes);
  bounds[0] = 0;
  // Target in units of rows + entries; __int128 keeps r * (E + N) exact however large the graph.
  const __int128 total = static_cast<__int128>(num_entries) + num_nodes;
  for (int32_t r = 1; r < num_slices; ++r) {
    const __int128 target = total * r / num_slices;
    int64_t lo = bounds[r - 1], hi = num_nodes;  // first v in [lo, hi] with indptr[v] + v >= target
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<__int128>(indptr_at(mid)) + mid >= target)
        hi = mid;
      else
        lo = mid + 1;
    }
    bounds[r] = lo;
  }
  return bounds;
}

int64_t slice_degree(const GraphSlice& slice, int64_t i) {
  const auto begin = slice.indices.begin() + slice.row_begin(i),
             end = slice.indices.begin() + slice.row_end(i);
  return (end - begin) - (std::binary_search(begin, end, slice.begin + i) ? 1 : 0);
}

int32_t slice_of_vertex(const std::vector<int64_t>& bounds, int64_t v) {
  // The last r with bounds[r] <= v (empty slices share a boundary with the next one).
  return static_cast<int32_t>(std::upper_bound(bounds.begin(), bounds.end() - 1, v) - bounds.begin()) - 1;
}

GraphSlice read_graph_slice(const h5::File& file, int64_t num_nodes, int64_t num_entries, int64_t begin,
                            int64_t end) {
  const char* path = file.path().c_str();
  GraphSlice slice;
  slice.begin = begin;
  slice.end = end;
  slice.indptr = file.read_rows<int64_t>("/csr/indptr", begin, end + 1);
  for (int64_t i = 0; i < end - begin + 1; ++i) {
    const int64_t offset = slice.indptr[i];
    HALOGEN_USER_CHECK(offset >= 0 && offset <= num_entries && (i == 0 || offset >= slice.indptr[i - 1]),
                       "%s: /csr/indptr: index %lld: %lld is decreasing or outside [0, %lld]", path,
                       static_cast<long long>(begin + i), static_cast<long long>(offset),
                       static_cast<long long>(num_entries));
  }
  HALOGEN_USER_CHECK(begin > 0 || slice.indptr.front() == 0, "%s: /csr/indptr: index 0 is not 0", path);
  HALOGEN_USER_CHECK(end < num_nodes || slice.indptr.back() == num_entries,
                     "%s: /csr/indptr: last value %lld != %lld entries", path,
                     static_cast<long long>(slice.indptr.back()), static_cast<long long>(num_entries));
  slice.indices = file.read_rows<int64_t>("/csr/indices", slice.indptr.front(), slice.indptr.back());
  if (file.exists("/csr/weight"))
    slice.weight = file.read_rows<float>("/csr/weight", slice.indptr.front(), slice.indptr.back());
  for (int64_t i = 0; i < slice.num_rows(); ++i) {
    for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e) {
      const int64_t v = slice.indices[e];
      HALOGEN_USER_CHECK(v >= 0 && v < num_nodes, "%s: /csr/indices: index %lld: column %lld outside [0, %lld)",
                         path, static_cast<long long>(slice.first_entry() + e), static_cast<long long>(v),
                         static_cast<long long>(num_nodes));
      HALOGEN_USER_CHECK(e == slice.row_begin(i) || slice.indices[e - 1] < v,
                         "%s: /csr/indices: index %lld: row %lld is not sorted or holds a duplicate", path,
                         static_cast<long long>(slice.first_entry() + e), static_cast<long long>(begin + i));
    }
  }
  return slice;
}

}  // namespace halogen::partition
