#pragma once
// One rank's shard of a partitioned graph: exactly the contents of part-%05d.h5 (DESIGN.md, "Files").
// Local ids: owned vertices are [0, n_own) in the order of owned_gid; halo vertices are [n_own, n_own+n_halo)
// in the order of halo_gid, which is grouped by owner part (rows [plan.recv_offsets[q], plan.recv_offsets[q+1])
// of the halo come from part q; graph/halo_plan.h).
#include <cstdint>
#include <string>
#include <vector>

#include "graph/halo_plan.h"

namespace halogen::graph {

// One time step of a dynamic graph on this shard (partition/snapshot_shard.h). Ownership is that of the
// shard (fixed over time). The snapshot's halo is a subset of the shard's (union) halo: halo_rows lists the
// positions in Shard::halo_gid that snapshot t reads, ascending, so it is still grouped by owner part. The
// snapshot's local ids are compact: owned [0, n_own) as in the shard, then its own halo [n_own, n_own +
// n_halo_t) in the order of halo_rows. So the exchange of a snapshot works exactly like the static one.
struct ShardSnapshot {
  std::vector<int64_t> halo_rows;     // (n_halo_t) positions into Shard::halo_gid, ascending
  HaloPlan plan;                      // the snapshot's exchange: plan.num_halo() == n_halo_t, S_t rows sent
  std::vector<int64_t> indptr{0};     // (n_own+1) owned rows of the snapshot's global CSR
  std::vector<int32_t> indices;       // (nnz_t) compact local column ids, sorted within a row
  std::vector<float> weight;          // (nnz_t) edge weights, empty when unweighted
  std::vector<int64_t> degree_owned;  // (n_own) degree in this snapshot (global row length, no self-loop)
  std::vector<int64_t> degree_halo;   // (n_halo_t) degree in this snapshot of the snapshot's halo vertices

  int64_t num_halo() const { return static_cast<int64_t>(halo_rows.size()); }
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

// One link-prediction step s of a dynamic graph on this shard (partition/link_steps.h): the embeddings of
// snapshot s score the pairs of snapshot s+1. Sources are the owned u with at least one neighbour v != u in
// G_{s+1}, ascending; a source's pairs are its positives (its neighbours in G_{s+1}, ascending gid) then its
// sampled negatives (non-neighbours w != u, in draw order). An endpoint's row is its owned local id, or
// n_own + f for the f-th fetched row; fetched rows are the non-owned endpoints, grouped by owner part,
// ascending gid within a group, and `plan` brings them from their owners (halo rows of the plan = fetched).
struct ShardLinkStep {
  std::vector<int64_t> source_offsets{0};  // (n_src+1) pairs [off[i], off[i+1]) have source sources[i]
  std::vector<int32_t> sources;            // (n_src) owned local ids, ascending
  std::vector<int32_t> target;             // (pairs) row of the other endpoint: < n_own owned, else n_own + f
  std::vector<uint8_t> label;              // (pairs) 1: edge of G_{s+1}; 0: sampled negative
  std::vector<int64_t> fetched_gid;        // (n_fetched) global ids of the fetched rows, in plan halo order
  HaloPlan plan;                           // fetch plan; plan.num_halo() == n_fetched

  int64_t num_pairs() const { return static_cast<int64_t>(target.size()); }
  int64_t num_fetched() const { return static_cast<int64_t>(fetched_gid.size()); }
};

struct Shard {
  int32_t part = 0;
  int32_t num_parts = 1;
  int64_t global_num_nodes = 0;
  int64_t global_num_edges = 0;
  int32_t num_classes = 0;
  int64_t num_features = 0;
  std::string graph_name;
  bool directed = false;  // the graph's (meta.json): false means every edge is stored both ways

  // (n_own) global ids: ascending in `gid` vertex order, a reverse Cuthill-McKee order of the part in `rcm`
  // (partition/vertex_order.h). Never assume it sorted: map by value.
  std::vector<int64_t> owned_gid;
  std::vector<int64_t> halo_gid;      // (n_halo) global ids, grouped by owner, ascending within a group
  HaloPlan plan;                      // the exchange (/halo/recv_offsets, /send/idx, /send/offsets)

  std::vector<int64_t> indptr{0};     // (n_own+1) local CSR of the owned rows (global adjacency rows)
  std::vector<int32_t> indices;       // (nnz) local column ids, sorted within a row
  std::vector<float> weight;          // (nnz) edge weights, empty when unweighted

  std::vector<int64_t> degree_owned;  // (n_own) global degree (row length in the global CSR, no self-loop)
  std::vector<int64_t> degree_halo;   // (n_halo) global degree of halo vertices

  std::vector<float> features;        // (n_own, num_features)
  std::vector<int32_t> labels;        // (n_own), -1 = none; empty when the graph has none
  std::vector<float> targets;         // regression targets (T, n_own) or (n_own); empty when none
  int64_t target_steps = 0;
  // The converter's transform of the targets (graph::Graph::TargetPreprocess; meta.json's graph.preprocess):
  // empty name = none recorded. For a per-node standardisation the owned vertices' offset/scale
  // (/node/label_offset, /node/label_scale): original = stored * scale + offset; empty for log1p (original =
  // expm1(stored)) and in partitions made before they were written.
  std::string target_preprocess;
  std::vector<double> target_offset, target_scale;  // (n_own) or empty
  std::vector<int64_t> train, valid, test;  // local ids (into [0, n_own)), ascending
  uint8_t splits_present = 0;               // bit i set: /split/{train,valid,test}[i] is in the file
  std::vector<ShardSnapshot> snapshots;     // dynamic graphs: one per time step; empty for static graphs
  // Link prediction (dynamic graphs): one step per snapshot pair (s, s+1), written by `halogen partition`
  // with `link_negatives` sampled negatives per positive; link_negatives == 0 when the shard has none (static
  // graphs, or partitions made before link steps were written).
  int64_t link_negatives = 0;
  std::vector<ShardLinkStep> link_steps;

  int64_t num_owned() const { return static_cast<int64_t>(owned_gid.size()); }
  int64_t num_halo() const { return static_cast<int64_t>(halo_gid.size()); }
  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
};

}  // namespace halogen::graph
