#pragma once
// The halo plan of every part, computed once from the global adjacency and the assignment. A part's halo is
// the set of remote columns of its owned rows (vertices it reads but does not own), grouped by owner part and
// ascending within a group. What part p sends to part q is q's halo group from p, in q's order, so the plan
// for sends needs nothing beyond the halos.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"

namespace halogen::partition {

struct HaloPlan {
  int32_t num_parts = 0;
  std::vector<int32_t> part_of;        // (N) owner part of every vertex
  std::vector<int32_t> local_of;       // (N) local id of every vertex within its owner, in [0, n_own(owner))
  std::vector<int64_t> owned_offsets;  // (P+1) part p owns owned_gid[owned_offsets[p] .. owned_offsets[p+1])
  std::vector<int64_t> owned_gid;      // (N) vertices grouped by part, ascending within a part
  std::vector<std::vector<int64_t>> halo_gid;  // [p] (n_halo(p)) grouped by owner, ascending within a group
  std::vector<std::vector<int64_t>> recv_offsets;  // [p] (P+1) halo rows of p owned by q: [off[q], off[q+1])

  int64_t num_owned(int32_t p) const { return owned_offsets[p + 1] - owned_offsets[p]; }
  int64_t num_halo(int32_t p) const { return static_cast<int64_t>(halo_gid[p].size()); }
  // Rows part `from` sends to part `to` per exchange.
  int64_t rows_sent(int32_t from, int32_t to) const {
    return recv_offsets[to][from + 1] - recv_offsets[to][from];
  }
};

// part_of (N) holds values in [0, num_parts) (asserted). Parts are processed in parallel (OpenMP).
// UserError when a part's owned + halo rows exceed the int32 local ids of a shard.
HaloPlan build_halo_plan(const graph::Csr& adjacency, std::vector<int32_t> part_of, int32_t num_parts);

// Builds part p's shard from the whole graph: build_shard over the rows of `graph`
// (partition/shard_builder.h), with the halo and send plan from `plan` (directed graphs too: a part sends
// what the others' halos hold). Owned rows' CSR in local ids (columns sorted), global degrees (row length
// without self-loop), owned features/labels/targets and splits (local ids). Dynamic-graph snapshots are not
// included. A graph held without its feature values (num_features > 0, features empty:
// io::read_graph_without_features) gives a shard with empty features, for the caller to fill (rows owned_gid
// of /node/feat).
graph::Shard build_shard(const graph::Graph& graph, const HaloPlan& plan, int32_t part);

// The send half of a graph::HaloPlan built from marks: which owned rows each other part must receive from this
// part. Flags per part are allocated on the first mark for that part; fill_send writes send_idx in part order,
// ascending local id within a part (= the receiving part's halo order, which ascends by gid), and send_offsets.
class SendMarks {
 public:
  SendMarks(int32_t num_parts, int64_t num_owned) : num_owned_(num_owned), marked_(static_cast<size_t>(num_parts)) {}
  void mark(int32_t part, int64_t local_row) {
    std::vector<uint8_t>& flags = marked_[static_cast<size_t>(part)];
    if (flags.empty()) flags.assign(static_cast<size_t>(num_owned_), 0);
    flags[static_cast<size_t>(local_row)] = 1;
  }
  void fill_send(graph::HaloPlan& plan) const;

 private:
  int64_t num_owned_;
  std::vector<std::vector<uint8_t>> marked_;  // (num_parts) x (num_owned or empty)
};

// Global degree of v without its self-loop (row length minus one when (v, v) is stored).
int64_t degree_without_self_loop(const graph::Csr& adjacency, int64_t v);

}  // namespace halogen::partition
