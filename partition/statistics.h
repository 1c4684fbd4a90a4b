#pragma once
// Partition quality: edge cut, halo rows (= rows received per exchange), rows sent and the parts sent to, and
// load balance (max/mean) of vertices, edges and training vertices. All per-part (P), none per pair of parts:
// the rows part p sends to part q are HaloPlan::rows_sent(p, q), and a shard's /send/offsets.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "partition/halo_plan.h"

namespace halogen::partition {

struct PartitionStats {
  int32_t num_parts = 0;
  // Edges whose endpoints lie in different parts: undirected edges counted once for an undirected graph,
  // stored (directed) entries otherwise. Self-loops are never cut.
  int64_t cut_edges = 0;
  std::vector<int64_t> owned, nnz, train, halo, send;  // (P) per part; send = rows sent per exchange
  std::vector<int64_t> send_peers;  // (P) parts q != p that part p sends rows to
  int64_t total_halo = 0, max_halo = 0;
  double vertex_balance = 1, edge_balance = 1, train_balance = 1;  // max / mean (1 = perfect)
  int32_t empty_parts = 0;
  // Dynamic graphs: halo rows of all parts together at each time step (the rows one exchange of snapshot t
  // moves); empty for a static graph. Filled by write_partition as it builds the snapshot shards.
  std::vector<int64_t> snapshot_halo_rows;
};

PartitionStats compute_statistics(const graph::Graph& graph, const HaloPlan& plan);

// max / mean of `values`; 1 when all are zero.
double balance_of(const std::vector<int64_t>& values);

// Human-readable summary: one line of totals and a per-part table.
std::string format_statistics(const PartitionStats& stats);

}  // namespace halogen::partition
