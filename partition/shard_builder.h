#pragma once
// One shard builder for every partitioning path. A part's rows may be held in different ways - the whole
// graph in memory with a global halo plan (METIS, random, contiguous: partition/halo_plan.h) or only the rows
// a process received from the others (PT-Scotch: partition/received_rows.h) - but the shard made from them is
// the same, byte for byte, and is made by build_shard(const RowSource&) below. A RowSource says what only the
// holder of the rows knows (the rows, their columns' owners, the halo, what the other parts need, the node
// data); the builder does the rest: the int32 checks, the local CSR (ids mapped, columns sorted, weights
// carried), owned degrees and the local splits.
#include <cstdint>
#include <vector>

#include "graph/shard.h"

namespace halogen::partition {

// One stored entry of an owned row: the column's global id, the part that owns it, and the edge weight (0
// when the graph is unweighted).
struct RowEntry {
  int64_t column;
  int32_t owner;
  float weight;
};

// The rows of one part, wherever they are held. Every method is const and may be called from several threads
// at once (row() and owned_degree() are, from an OpenMP loop).
class RowSource {
 public:
  virtual ~RowSource() = default;

  // The shard's header: part, num_parts, global_num_nodes, global_num_edges, num_classes, num_features,
  // graph_name. Nothing else of `s` is touched.
  virtual void header(graph::Shard& s) const = 0;
  // Whether the rows carry edge weights.
  virtual bool weighted() const = 0;
  // Owned vertices: local id i is the i-th, global ids ascending.
  virtual int64_t num_owned() const = 0;
  virtual int64_t owned_gid(int64_t i) const = 0;
  // Row i's number of stored entries, and the entries themselves, in any order, into `entries` (cleared
  // first).
  virtual int64_t row_length(int64_t i) const = 0;
  virtual void row(int64_t i, std::vector<RowEntry>& entries) const = 0;
  // Global degree of owned vertex i: its row length without the self-loop.
  virtual int64_t owned_degree(int64_t i) const = 0;
  // The part's halo (the remote columns of its rows) into s.halo_gid (grouped by owner part, ascending gid
  // within a group), s.plan.recv_offsets (P+1) and s.degree_halo (global degrees).
  virtual void halo(graph::Shard& s) const = 0;
  // What this part sends, into s.plan.send_idx and s.plan.send_offsets: to part q, the owned rows in q's
  // halo, in q's halo order (s.owned_gid and the halo are set).
  virtual void sends(graph::Shard& s) const = 0;
  // Node data of the owned rows (s.owned_gid set): labels, regression targets (and their preprocess record),
  // features; what the source does not hold stays empty, for the caller to fill.
  virtual void node_data(graph::Shard& s) const = 0;
  // The graph's train (0), valid (1) and test (2) splits as global ids, each at most once, in any order.
  virtual const std::vector<int64_t>& split(int which) const = 0;
  // Whether global ids may be mapped to local ids through a table over all N vertices (4 N bytes per shard,
  // O(1) per entry): where the whole graph is in memory anyway. Otherwise by binary search over the owned and
  // halo ids, in memory proportional to the part.
  virtual bool dense_ids() const = 0;
};

// Part's shard from its rows, owned vertices in ascending gid (the callers apply --vertex-order afterwards:
// partition/vertex_order.h): header, owned_gid, halo and exchange plan, local CSR (columns: [0, n_own) owned
// in owned_gid order, then n_own + position in the halo; sorted within a row; weights carried), global
// degrees, node data and splits (local ids, ascending). Rows are mapped in parallel (OpenMP); the result does
// not depend on the thread count. UserError when owned + halo rows exceed a shard's int32 local ids.
graph::Shard build_shard(const RowSource& rows);

}  // namespace halogen::partition
