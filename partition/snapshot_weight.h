#pragma once
// Edge weights for partitioning a dynamic graph's union: an edge's weight is the number of snapshots that
// contain it, so METIS prefers to cut edges that exist at few time steps (less halo traffic summed over
// time).
#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace halogen::partition {

// For METIS's symmetric input rows (xadj, adjncy: the union made undirected, no self-loops, rows sorted),
// the weight of every entry (u, v): the number of snapshots holding (u, v), plus, for a directed graph, the
// number holding (v, u) (so the weights are symmetric as METIS requires). At least 1 (an entry of the union
// without any snapshot still costs something when cut). Empty when the graph has no snapshots.
std::vector<int32_t> snapshot_edge_counts(const graph::Graph& graph, const std::vector<int32_t>& xadj,
                                          const std::vector<int32_t>& adjncy);

}  // namespace halogen::partition
