// build_shard over a RowSource (partition/shard_builder.h): the one place a shard's local CSR, degrees and
// splits are made, whichever partitioner produced the assignment.
#include "partition/shard_builder.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace halogen::partition {

namespace {

// Global id -> local id of one shard: owned vertices [0, n_own), halo vertices n_own + their position.
class LocalIds {
 public:
  LocalIds(const graph::Shard& s, bool dense, int64_t num_nodes) : s_(s), n_own_(s.num_owned()) {
    if (!dense) return;
    table_.assign(static_cast<size_t>(num_nodes), -1);
    for (int64_t i = 0; i < n_own_; ++i) table_[s.owned_gid[i]] = static_cast<int32_t>(i);
    for (int64_t h = 0; h < s.num_halo(); ++h) table_[s.halo_gid[h]] = static_cast<int32_t>(n_own_ + h);
  }

  // The local id of a column owned by `owner` (the shard's part: an owned column; else a halo column).
  int32_t column(int64_t gid, int32_t owner) const {
    if (!table_.empty()) return table_[gid];
    if (owner == s_.part) return owned(gid);
    const auto group = s_.halo_gid.begin() + s_.plan.recv_offsets[owner];
    const auto end = s_.halo_gid.begin() + s_.plan.recv_offsets[owner + 1];
    return static_cast<int32_t>(n_own_ + s_.plan.recv_offsets[owner] +
                                (std::lower_bound(group, end, gid) - group));
  }

  // The local id of an owned vertex, or -1 when the shard does not own gid.
  int32_t owned(int64_t gid) const {
    if (!table_.empty()) {
      const int32_t local = table_[gid];
      return local < n_own_ ? local : -1;
    }
    const auto at = std::lower_bound(s_.owned_gid.begin(), s_.owned_gid.end(), gid);
    return at != s_.owned_gid.end() && *at == gid ? static_cast<int32_t>(at - s_.owned_gid.begin()) : -1;
  }

 private:
  const graph::Shard& s_;
  int64_t n_own_;
  std::vector<int32_t> table_;  // (N) or empty
};

// Local ids of the members of a global split that the shard owns, ascending.
std::vector<int64_t> local_split(const std::vector<int64_t>& split, const LocalIds& ids) {
  std::vector<int64_t> local;
  for (int64_t v : split) {
    const int32_t i = ids.owned(v);
    if (i >= 0) local.push_back(i);
  }
  std::sort(local.begin(), local.end());
  return local;
}

}  // namespace

graph::Shard build_shard(const RowSource& rows) {
  graph::Shard s;
  rows.header(s);
  const int32_t part = s.part;
  const int64_t n_own = rows.num_owned();
  HALOGEN_USER_CHECK(n_own <= std::numeric_limits<int32_t>::max(),
                     "part %d owns %lld vertices, more than a shard's int32 local ids allow; use more parts",
                     part, static_cast<long long>(n_own));
  s.owned_gid.resize(n_own);
  for (int64_t i = 0; i < n_own; ++i) s.owned_gid[i] = rows.owned_gid(i);

  rows.halo(s);
  const int64_t n_halo = s.num_halo();
  HALOGEN_USER_CHECK(
      n_own + n_halo <= std::numeric_limits<int32_t>::max(),
      "part %d has %lld owned + %lld halo rows, more than a shard's int32 local ids allow; use "
      "more parts",
      part, static_cast<long long>(n_own), static_cast<long long>(n_halo));
  rows.sends(s);
  const LocalIds ids(s, rows.dense_ids(), s.global_num_nodes);

  // Local CSR: row lengths, then the entries (ids mapped, sorted by local column).
  s.indptr.assign(n_own + 1, 0);
  for (int64_t i = 0; i < n_own; ++i) s.indptr[i + 1] = s.indptr[i] + rows.row_length(i);
  const bool weighted = rows.weighted();
  s.indices.resize(s.indptr[n_own]);
  if (weighted) s.weight.resize(s.indptr[n_own]);
  s.degree_owned.resize(n_own);
#pragma omp parallel
  {
    std::vector<RowEntry> entries;
    std::vector<std::pair<int32_t, float>> row;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < n_own; ++i) {
      rows.row(i, entries);
      row.clear();
      bool sorted = true;
      for (const RowEntry& entry : entries) {
        const int32_t local = ids.column(entry.column, entry.owner);
        sorted &= row.empty() || row.back().first < local;
        row.emplace_back(local, entry.weight);
      }
      // Owned columns keep the order of gids; halo columns may not.
      if (!sorted)
        std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      HALOGEN_ASSERT(static_cast<int64_t>(row.size()) == s.indptr[i + 1] - s.indptr[i],
                     "row %lld: %zu entries", static_cast<long long>(i), row.size());
      int64_t at = s.indptr[i];
      for (const auto& [column, weight] : row) {
        s.indices[at] = column;
        if (weighted) s.weight[at] = weight;
        ++at;
      }
      s.degree_owned[i] = rows.owned_degree(i);
    }
  }

  rows.node_data(s);
  s.train = local_split(rows.split(0), ids);
  s.valid = local_split(rows.split(1), ids);
  s.test = local_split(rows.split(2), ids);
  return s;
}

}  // namespace halogen::partition
