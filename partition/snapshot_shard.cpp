#include "partition/snapshot_shard.h"

#include <algorithm>

#include "core/error.h"

namespace halogen::partition {

graph::ShardSnapshot build_shard_snapshot(const graph::Csr& snapshot, const HaloPlan& plan,
                                          const graph::Shard& shard) {
  const int32_t part = shard.part, parts = plan.num_parts;
  const int64_t n = snapshot.num_rows, n_own = shard.num_owned(), n_union_halo = shard.num_halo();
  HALOGEN_ASSERT(n == static_cast<int64_t>(plan.part_of.size()), "snapshot has %lld rows, plan %zu",
                 static_cast<long long>(n), plan.part_of.size());
  graph::ShardSnapshot s;

  // Union halo position of every halo vertex by global id (-1 elsewhere).
  std::vector<int32_t> union_position(static_cast<size_t>(n), -1);
  for (int64_t h = 0; h < n_union_halo; ++h) union_position[shard.halo_gid[h]] = static_cast<int32_t>(h);

  // The snapshot's halo: union halo positions read by the owned rows at this step.
  std::vector<uint8_t> used(static_cast<size_t>(n_union_halo), 0);
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t u = shard.owned_gid[i];
    for (int64_t e = snapshot.indptr[u]; e < snapshot.indptr[u + 1]; ++e) {
      const int64_t v = snapshot.indices[e];
      if (plan.part_of[v] == part) continue;
      HALOGEN_USER_CHECK(union_position[v] >= 0,
                         "snapshot edge (%lld, %lld) is not in the union graph the partition was made from",
                         static_cast<long long>(u), static_cast<long long>(v));
      used[union_position[v]] = 1;
    }
  }
  std::vector<int32_t> compact(static_cast<size_t>(n_union_halo), -1);  // union position -> snapshot local id
  s.plan.recv_offsets.assign(parts + 1, 0);
  for (int64_t h = 0; h < n_union_halo; ++h) {
    if (!used[h]) continue;
    compact[h] = static_cast<int32_t>(n_own + s.num_halo());
    s.halo_rows.push_back(h);
    ++s.plan.recv_offsets[plan.part_of[shard.halo_gid[h]] + 1];
  }
  for (int32_t q = 0; q < parts; ++q) s.plan.recv_offsets[q + 1] += s.plan.recv_offsets[q];

  // Local CSR in compact ids; rows sorted (owned ids ascend with gids; snapshot halo ids with union ids).
  s.indptr.assign(n_own + 1, 0);
  s.degree_owned.resize(n_own);
  const bool weighted = snapshot.weighted();
  std::vector<std::pair<int32_t, float>> row;
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t u = shard.owned_gid[i];
    row.clear();
    for (int64_t e = snapshot.indptr[u]; e < snapshot.indptr[u + 1]; ++e) {
      const int64_t v = snapshot.indices[e];
      const int32_t local = plan.part_of[v] == part ? plan.local_of[v] : compact[union_position[v]];
      row.emplace_back(local, weighted ? snapshot.weight[e] : 0.0f);
    }
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [column, weight] : row) {
      s.indices.push_back(column);
      if (weighted) s.weight.push_back(weight);
    }
    s.indptr[i + 1] = static_cast<int64_t>(s.indices.size());
    s.degree_owned[i] = degree_without_self_loop(snapshot, u);
  }
  s.degree_halo.resize(s.halo_rows.size());
  for (size_t h = 0; h < s.halo_rows.size(); ++h)
    s.degree_halo[h] = degree_without_self_loop(snapshot, shard.halo_gid[s.halo_rows[h]]);

  // Send plan: part q's snapshot halo group from this part = the owned v with an edge u -> v, u owned by q
  // (q != part). q orders that group by ascending gid, which is ascending local id here.
  SendMarks sends(parts, n_own);
  for (int64_t u = 0; u < n; ++u) {
    const int32_t q = plan.part_of[u];
    if (q == part) continue;
    for (int64_t e = snapshot.indptr[u]; e < snapshot.indptr[u + 1]; ++e) {
      const int64_t v = snapshot.indices[e];
      if (plan.part_of[v] == part) sends.mark(q, plan.local_of[v]);
    }
  }
  sends.fill_send(s.plan);
  return s;
}

std::vector<graph::ShardSnapshot> build_shard_snapshots(const graph::Graph& graph, const HaloPlan& plan,
                                                        const graph::Shard& shard) {
  std::vector<graph::ShardSnapshot> out;
  out.reserve(graph.snapshots.size());
  for (const graph::Csr& snapshot : graph.snapshots)
    out.push_back(build_shard_snapshot(snapshot, plan, shard));
  return out;
}

}  // namespace halogen::partition
