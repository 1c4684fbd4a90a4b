#pragma once
// HaloPlan: which rows one rank exchanges with each other rank for one adjacency (DESIGN.md "Files": what
// `halogen partition` writes into each shard, for the static graph and for every snapshot). Local ids: owned
// rows are [0, n_own); the plan's halo rows are [n_own, n_own + num_halo()) in recv order, grouped by owner.
//
//   forward (gather):        halo row n_own + recv_offsets[q] + i  <-  owned row send_idx[send_offsets[q] + i]
//                            of rank q (rank q's send list for us is in our halo order)
//   reverse (scatter-add):   the same pairs in the other direction, added into the owner's row
#include <cstdint>
#include <vector>

namespace halogen::graph {

struct HaloPlan {
  std::vector<int64_t> recv_offsets;  // (P+1) halo rows [off[q], off[q+1]) arrive from part q
  std::vector<int32_t> send_idx;      // (S) local owned row ids sent, grouped by destination part
  std::vector<int64_t> send_offsets;  // (P+1) rows [off[q], off[q+1]) of send_idx go to part q, in q's halo order

  int64_t num_halo() const { return recv_offsets.empty() ? 0 : recv_offsets.back(); }
  int64_t num_send() const { return send_offsets.empty() ? 0 : send_offsets.back(); }
};

}  // namespace halogen::graph
