// The records of --method ptscotch's row exchange and the RowSource over them (partition/received_rows.h).
#include "partition/received_rows.h"

#include <algorithm>

#include "partition/halo_plan.h"

namespace halogen::partition {

PackedRows pack_rows(const GraphSlice& slice, const std::vector<int32_t>& part,
                     const std::vector<int32_t>& labels, const std::function<int64_t(int64_t)>& column_word,
                     int num_processes) {
  const int64_t n_local = slice.num_rows();
  const bool weighted = !slice.weight.empty();
  PackedRows packed;
  packed.offsets.assign(num_processes + 1, 0);
  packed.weight_offsets.assign(num_processes + 1, 0);
  for (int64_t i = 0; i < n_local; ++i) {
    const int d = part[i] % num_processes;
    packed.offsets[d + 1] += 4 + 2 * (slice.row_end(i) - slice.row_begin(i));
    packed.weight_offsets[d + 1] += slice.row_end(i) - slice.row_begin(i);
  }
  for (int d = 0; d < num_processes; ++d) {
    packed.offsets[d + 1] += packed.offsets[d];
    packed.weight_offsets[d + 1] += packed.weight_offsets[d];
  }
  packed.records.resize(packed.offsets[num_processes]);
  if (weighted) packed.weights.resize(packed.weight_offsets[num_processes]);
  std::vector<int64_t> fill(packed.offsets.begin(), packed.offsets.end() - 1);
  std::vector<int64_t> weight_fill(packed.weight_offsets.begin(), packed.weight_offsets.end() - 1);
  for (int64_t i = 0; i < n_local; ++i) {
    const int d = part[i] % num_processes;
    int64_t& at = fill[d];
    packed.records[at++] = slice.begin + i;
    packed.records[at++] = part[i];
    packed.records[at++] = labels.empty() ? -1 : labels[i];
    packed.records[at++] = slice.row_end(i) - slice.row_begin(i);
    for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e) {
      packed.records[at++] = slice.indices[e];
      packed.records[at++] = column_word(slice.indices[e]);
      if (weighted) packed.weights[weight_fill[d]++] = slice.weight[e];
    }
  }
  return packed;
}

std::vector<PartRows> index_received(const std::vector<int64_t>& records, int rank, int num_processes,
                                     int32_t num_parts) {
  // Records arrive by source rank, slices ascend with rank: each part's rows come out in ascending gid.
  const int32_t my_parts = rank < num_parts ? (num_parts - 1 - rank) / num_processes + 1 : 0;
  std::vector<PartRows> rows(static_cast<size_t>(my_parts));
  int64_t weight_at = 0;
  for (int64_t at = 0; at < static_cast<int64_t>(records.size());) {
    PartRows& r = rows[static_cast<size_t>(records[at + 1] / num_processes)];
    r.record_at.push_back(at);
    r.weight_at.push_back(weight_at);
    weight_at += records[at + 3];
    at += 4 + 2 * records[at + 3];
  }
  return rows;
}

void ReceivedRows::header(graph::Shard& s) const {
  s.part = part_;
  s.num_parts = num_parts_;
  s.global_num_nodes = header_.num_nodes;
  s.global_num_edges = header_.num_edges;
  s.num_classes = header_.num_classes;
  s.num_features = header_.num_features;
  s.graph_name = header_.name;
}

void ReceivedRows::row(int64_t i, std::vector<RowEntry>& entries) const {
  entries.clear();
  const int64_t at = rows_.record_at[i], n = records_[at + 3];
  for (int64_t k = 0; k < n; ++k)
    entries.push_back({records_[at + 4 + 2 * k], packed_part(records_[at + 5 + 2 * k]),
                       weighted_ ? weights_[rows_.weight_at[i] + k] : 0.0f});
}

int64_t ReceivedRows::owned_degree(int64_t i) const {
  const int64_t at = rows_.record_at[i], n = records_[at + 3], gid = records_[at];
  for (int64_t k = 0; k < n; ++k)
    if (records_[at + 4 + 2 * k] == gid) return n - 1;
  return n;
}

void ReceivedRows::halo(graph::Shard& s) const {
  // Remote columns as (part, gid, degree), grouped by part, ascending gid within a part.
  struct Remote {
    int32_t part;
    int64_t gid, degree;
  };
  std::vector<Remote> remote;
  for (int64_t at : rows_.record_at) {
    const int64_t n = records_[at + 3];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t word = records_[at + 5 + 2 * k];
      if (packed_part(word) != part_)
        remote.push_back({packed_part(word), records_[at + 4 + 2 * k], packed_degree(word)});
    }
  }
  std::sort(remote.begin(), remote.end(), [](const Remote& a, const Remote& b) {
    return a.part != b.part ? a.part < b.part : a.gid < b.gid;
  });
  remote.erase(std::unique(remote.begin(), remote.end(),
                           [](const Remote& a, const Remote& b) { return a.gid == b.gid; }),
               remote.end());
  const int64_t n_halo = static_cast<int64_t>(remote.size());
  s.halo_gid.resize(n_halo);
  s.degree_halo.resize(n_halo);
  s.plan.recv_offsets.assign(static_cast<size_t>(num_parts_) + 1, 0);
  for (int64_t h = 0; h < n_halo; ++h) {
    s.halo_gid[h] = remote[h].gid;
    s.degree_halo[h] = remote[h].degree;
    ++s.plan.recv_offsets[remote[h].part + 1];
  }
  for (int32_t q = 0; q < num_parts_; ++q) s.plan.recv_offsets[q + 1] += s.plan.recv_offsets[q];
}

// Undirected: part q needs owned row i iff row i has a column in q.
void ReceivedRows::sends(graph::Shard& s) const {
  const int64_t n_own = num_owned();
  SendMarks marks(num_parts_, n_own);
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t at = rows_.record_at[i], n = records_[at + 3];
    for (int64_t k = 0; k < n; ++k) {
      const int32_t q = packed_part(records_[at + 5 + 2 * k]);
      if (q != part_) marks.mark(q, i);
    }
  }
  marks.fill_send(s.plan);
}

void ReceivedRows::node_data(graph::Shard& s) const {
  if (!header_.has_labels) return;  // features: read from the file by the caller, for the owned rows
  const int64_t n_own = num_owned();
  s.labels.resize(n_own);
  for (int64_t i = 0; i < n_own; ++i) s.labels[i] = static_cast<int32_t>(records_[rows_.record_at[i] + 2]);
}

}  // namespace halogen::partition
