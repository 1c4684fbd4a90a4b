#pragma once
// The rows of `--method ptscotch` on their way to the process that builds their part (part p is built by
// process p % K), and the RowSource that build_shard (partition/shard_builder.h) makes the shard from.
//
// A row travels as one record of int64 words: gid, part, label, n, then n x (column, part|degree word), the
// column's owner part and global degree packed in one word; its n weights travel in a separate float stream.
// The halo comes from the rows' remote columns, and what a part sends from its own rows: that needs an
// undirected graph (q holds v in its halo iff v has a neighbour in q), which read_header makes sure of.
#include <cstdint>
#include <functional>
#include <vector>

#include "partition/graph_slice.h"
#include "partition/ptscotch_header.h"
#include "partition/shard_builder.h"

namespace halogen::partition {

// A part and a degree in one int64: degree << 24 | part (P < 2^24 is checked; degrees stay below 2^39).
constexpr int kPartBits = 24;
constexpr int64_t kMaxParts = int64_t{1} << kPartBits;
inline int64_t pack_part_degree(int32_t part, int64_t degree) {
  return (degree << kPartBits) | part;
}
inline int32_t packed_part(int64_t word) {
  return static_cast<int32_t>(word & (kMaxParts - 1));
}
inline int64_t packed_degree(int64_t word) {
  return word >> kPartBits;
}

// The records of a slice's rows grouped by destination process (part % num_processes): block d is
// records[offsets[d], offsets[d+1]) and weights[weight_offsets[d], weight_offsets[d+1]) (weights empty when
// the graph is unweighted).
struct PackedRows {
  std::vector<int64_t> records, offsets;
  std::vector<float> weights;
  std::vector<int64_t> weight_offsets;
};

// Packs every row of `slice`: part[i] and label[i] (labels empty: -1) of row i, column_word(v) the packed
// part and degree of column v.
PackedRows pack_rows(const GraphSlice& slice, const std::vector<int32_t>& part,
                     const std::vector<int32_t>& labels, const std::function<int64_t(int64_t)>& column_word,
                     int num_processes);

// Where one part's rows lie in the received records (record_at) and weights (weight_at), in ascending gid.
struct PartRows {
  std::vector<int64_t> record_at, weight_at;
};

// Splits the records received by process `rank` (grouped by source process, each group in ascending gid) into
// its parts rank, rank + K, ...: one PartRows each, in that order.
std::vector<PartRows> index_received(const std::vector<int64_t>& records, int rank, int num_processes,
                                     int32_t num_parts);

// Part p's received rows as a RowSource. Holds references: header, records and weights must outlive it.
class ReceivedRows final : public RowSource {
 public:
  ReceivedRows(const FileHeader& header, int32_t part, int32_t num_parts, const std::vector<int64_t>& records,
               const std::vector<float>& weights, const PartRows& rows, bool weighted)
      : header_(header),
        part_(part),
        num_parts_(num_parts),
        records_(records),
        weights_(weights),
        rows_(rows),
        weighted_(weighted) {}

  void header(graph::Shard& s) const override;
  bool weighted() const override { return weighted_; }
  int64_t num_owned() const override { return static_cast<int64_t>(rows_.record_at.size()); }
  int64_t owned_gid(int64_t i) const override { return records_[rows_.record_at[i]]; }
  int64_t row_length(int64_t i) const override { return records_[rows_.record_at[i] + 3]; }
  void row(int64_t i, std::vector<RowEntry>& entries) const override;
  int64_t owned_degree(int64_t i) const override;
  void halo(graph::Shard& s) const override;
  void sends(graph::Shard& s) const override;
  void node_data(graph::Shard& s) const override;
  const std::vector<int64_t>& split(int which) const override {
    return which == 0 ? header_.train : which == 1 ? header_.valid : header_.test;
  }
  bool dense_ids() const override {
    return false;
  }  // a process holds a part, not the graph: no O(N) per part

 private:
  const FileHeader& header_;
  int32_t part_, num_parts_;
  const std::vector<int64_t>& records_;
  const std::vector<float>& weights_;
  const PartRows& rows_;
  bool weighted_;
};

}  // namespace halogen::partition
