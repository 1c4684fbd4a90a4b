#include "partition/check_snapshots.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "partition/halo_plan.h"

namespace halogen::partition {

namespace {

[[noreturn]] void violated(const std::string& file, const std::string& group, const std::string& what) {
  throw UserError(file + ": invariant violated: " + group + ": " + what);
}

}  // namespace

bool local_row_equals_global(const graph::Csr& global, int64_t u,
                             std::vector<std::pair<int64_t, float>>& row) {
  std::sort(row.begin(), row.end());
  if (static_cast<int64_t>(row.size()) != global.degree(u)) return false;
  for (int64_t k = 0; k < global.degree(u); ++k) {
    const int64_t e = global.indptr[u] + k;
    if (row[k].first != global.indices[e] || (global.weighted() && row[k].second != global.weight[e])) return false;
  }
  return true;
}

void check_shard_snapshots(const graph::Shard& s, const graph::Graph& g,
                           const std::vector<int32_t>& assignment, const std::string& file) {
  if (s.snapshots.size() != g.snapshots.size())
    violated(file, "/snapshots",
             std::to_string(s.snapshots.size()) + " snapshots, the graph has " +
                 std::to_string(g.snapshots.size()));
  const int64_t n_own = s.num_owned();
  const int32_t p = s.part;
  for (size_t t = 0; t < g.snapshots.size(); ++t) {
    const graph::Csr& adj = g.snapshots[t];
    const graph::ShardSnapshot& snap = s.snapshots[t];
    char group[32];
    std::snprintf(group, sizeof(group), "/snapshots/%05zu", t);
    auto gid_of = [&](int64_t local) {
      return local < n_own ? s.owned_gid[local] : s.halo_gid[snap.halo_rows[local - n_own]];
    };
    // Halo: remote neighbours at step t, each in its owner's group (halo_rows ascending, checked on read,
    // keeps them sorted by gid within a group).
    std::vector<int64_t> remote;
    for (int64_t u : s.owned_gid)
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
        if (assignment[adj.indices[e]] != p) remote.push_back(adj.indices[e]);
    std::sort(remote.begin(), remote.end());
    remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
    std::vector<int64_t> halo;
    for (int64_t h : snap.halo_rows) halo.push_back(s.halo_gid[h]);
    std::sort(halo.begin(), halo.end());
    if (halo != remote)
      violated(file, group,
               "halo/rows is not the set of remote neighbours at this step (" + std::to_string(halo.size()) +
                   " rows, " + std::to_string(remote.size()) + " expected)");
    // Local CSR and degrees.
    if (adj.weighted() != !snap.weight.empty())
      violated(file, group, "csr/weight present iff the snapshot is weighted");
    std::vector<std::pair<int64_t, float>> row;
    for (int64_t i = 0; i < n_own; ++i) {
      const int64_t u = s.owned_gid[i];
      row.clear();
      for (int64_t e = snap.indptr[i]; e < snap.indptr[i + 1]; ++e)
        row.emplace_back(gid_of(snap.indices[e]), snap.weight.empty() ? 0.0f : snap.weight[e]);
      if (!local_row_equals_global(adj, u, row))
        violated(file, group,
                 "local row " + std::to_string(i) + " differs from global row " + std::to_string(u));
      if (snap.degree_owned[i] != degree_without_self_loop(adj, u))
        violated(file, group, "degree/owned[" + std::to_string(i) + "] differs from the snapshot degree");
    }
    for (int64_t h = 0; h < snap.num_halo(); ++h)
      if (snap.degree_halo[h] != degree_without_self_loop(adj, s.halo_gid[snap.halo_rows[h]]))
        violated(file, group, "degree/halo[" + std::to_string(h) + "] differs from the snapshot degree");
    // Sends: to part r, the owned v with an edge u -> v at this step, u owned by r, ascending.
    std::vector<std::vector<int64_t>> expected(static_cast<size_t>(s.num_parts));
    for (int64_t u = 0; u < g.num_nodes; ++u) {
      const int32_t r = assignment[u];
      if (r == p) continue;
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
        if (assignment[adj.indices[e]] == p) expected[r].push_back(adj.indices[e]);
    }
    for (int32_t r = 0; r < s.num_parts; ++r) {
      std::sort(expected[r].begin(), expected[r].end());
      expected[r].erase(std::unique(expected[r].begin(), expected[r].end()), expected[r].end());
      std::vector<int64_t> sent;
      for (int64_t k = snap.plan.send_offsets[r]; k < snap.plan.send_offsets[r + 1]; ++k)
        sent.push_back(s.owned_gid[snap.plan.send_idx[k]]);
      if (sent != expected[r])
        violated(file, group,
                 "rows sent to part " + std::to_string(r) +
                     " are not the vertices its snapshot halo holds (" + std::to_string(sent.size()) +
                     " sent, " + std::to_string(expected[r].size()) + " expected)");
    }
  }
}

}  // namespace halogen::partition
