#include "partition/statistics.h"

#include <algorithm>
#include <numeric>

#include "core/format.h"

namespace halogen::partition {

double balance_of(const std::vector<int64_t>& values) {
  if (values.empty()) return 1.0;
  const double total = static_cast<double>(std::accumulate(values.begin(), values.end(), int64_t{0}));
  if (total == 0) return 1.0;
  const double mean = total / static_cast<double>(values.size());
  return static_cast<double>(*std::max_element(values.begin(), values.end())) / mean;
}

PartitionStats compute_statistics(const graph::Graph& graph, const HaloPlan& plan) {
  const graph::Csr& adj = graph.adjacency;
  const int32_t parts = plan.num_parts;
  PartitionStats stats;
  stats.num_parts = parts;
  stats.owned.assign(parts, 0);
  stats.nnz.assign(parts, 0);
  stats.train.assign(parts, 0);
  stats.halo.assign(parts, 0);
  stats.send.assign(parts, 0);
  stats.send_peers.assign(parts, 0);

  int64_t cut_entries = 0;
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : cut_entries)
  for (int64_t u = 0; u < graph.num_nodes; ++u)
    for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
      cut_entries += plan.part_of[adj.indices[e]] != plan.part_of[u];
  stats.cut_edges = graph.directed ? cut_entries : cut_entries / 2;

  for (int64_t u = 0; u < graph.num_nodes; ++u) stats.nnz[plan.part_of[u]] += adj.degree(u);
  for (int64_t v : graph.train) ++stats.train[plan.part_of[v]];
  for (int32_t p = 0; p < parts; ++p) {
    stats.owned[p] = plan.num_owned(p);
    stats.halo[p] = plan.num_halo(p);
    stats.empty_parts += stats.owned[p] == 0;
    for (int32_t q = 0; q < parts; ++q) {
      const int64_t rows = q == p ? 0 : plan.rows_sent(p, q);
      stats.send_peers[p] += rows > 0;
      stats.send[p] += rows;
    }
  }
  stats.total_halo = std::accumulate(stats.halo.begin(), stats.halo.end(), int64_t{0});
  stats.max_halo = *std::max_element(stats.halo.begin(), stats.halo.end());
  stats.vertex_balance = balance_of(stats.owned);
  stats.edge_balance = balance_of(stats.nnz);
  stats.train_balance = balance_of(stats.train);
  return stats;
}

std::string format_statistics(const PartitionStats& stats) {
  std::string out = strformat(
      "cut %lld edges | halo rows total %lld, max %lld | balance vertices %.3f edges %.3f train %.3f\n",
      static_cast<long long>(stats.cut_edges), static_cast<long long>(stats.total_halo),
      static_cast<long long>(stats.max_halo), stats.vertex_balance, stats.edge_balance, stats.train_balance);
  out += strformat("%6s %12s %14s %10s %12s %12s\n", "part", "owned", "nnz", "train", "halo(recv)", "send");
  for (int32_t p = 0; p < stats.num_parts; ++p)
    out += strformat("%6d %12lld %14lld %10lld %12lld %12lld\n", p, static_cast<long long>(stats.owned[p]),
                     static_cast<long long>(stats.nnz[p]), static_cast<long long>(stats.train[p]),
                     static_cast<long long>(stats.halo[p]), static_cast<long long>(stats.send[p]));
  if (stats.empty_parts > 0) out += strformat("warning: %d parts own no vertex\n", stats.empty_parts);
  return out;
}

}  // namespace halogen::partition
