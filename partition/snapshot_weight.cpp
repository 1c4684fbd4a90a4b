#include "partition/snapshot_weight.h"

#include <algorithm>

#include "core/error.h"

namespace halogen::partition {

std::vector<int32_t> snapshot_edge_counts(const graph::Graph& graph, const std::vector<int32_t>& xadj,
                                          const std::vector<int32_t>& adjncy) {
  if (graph.snapshots.empty()) return {};
  HALOGEN_USER_CHECK(graph.snapshots.size() < (size_t{1} << 29),
                     "%zu snapshots: too many for 32-bit METIS edge weights", graph.snapshots.size());
  const int64_t n = graph.num_nodes;
  std::vector<int32_t> count(adjncy.size(), 0);
  // Position of (u, v) in METIS row u, or -1 (a self-loop, which METIS does not see).
  auto position = [&](int64_t u, int64_t v) -> int64_t {
    const int32_t* begin = adjncy.data() + xadj[u];
    const int32_t* end = adjncy.data() + xadj[u + 1];
    const int32_t* it = std::lower_bound(begin, end, static_cast<int32_t>(v));
    return it != end && *it == v ? it - adjncy.data() : -1;
  };
  for (const graph::Csr& snapshot : graph.snapshots) {
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t e = snapshot.indptr[u]; e < snapshot.indptr[u + 1]; ++e) {
        const int64_t v = snapshot.indices[e];
        if (v == u) continue;
        const int64_t at = position(u, v);
        HALOGEN_ASSERT(at >= 0, "snapshot edge (%lld, %lld) not in the union", static_cast<long long>(u),
                       static_cast<long long>(v));
        ++count[at];  // row u is only written by this iteration
      }
    }
    if (graph.directed) {  // (u, v) in a snapshot also weighs the entry (v, u): rows written by others
      for (int64_t u = 0; u < n; ++u)
        for (int64_t e = snapshot.indptr[u]; e < snapshot.indptr[u + 1]; ++e)
          if (snapshot.indices[e] != u) ++count[position(snapshot.indices[e], u)];
    }
  }
  for (int32_t& c : count) c = std::max(c, 1);
  return count;
}

}  // namespace halogen::partition
