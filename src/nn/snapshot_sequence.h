#pragma once
// SnapshotSequence: the T time steps of a dynamic graph on one rank of P, as graph operators. For every step t
// it holds the normalised adjacency of the owned rows (graph/local_graph.h, built from the shard's
// ShardSnapshot t with that snapshot's own degrees) and the snapshot's halo exchange. Ownership is the
// shard's, fixed over time, so a rank's rows [0, n_own) mean the same vertices at every step.
//
//   aggregate(t, x, out):           out (n, f) "=" S_t x           x: (n, f), the OWNED rows only
//   aggregate_transpose(t, g, out): out (n, f) "=" S_t^T g         g: (n, f); includes the other ranks' terms
// where S_t = Â_t (gcn: D^-1/2 (A_t + I) D^-1/2) or L~_t (chebyshev: -D^-1/2 A_t D^-1/2). Both are
// collective: every rank calls them for the same t in the same order. The halo rows of x are exchanged into
// one shared scratch buffer, overlapped with the owned part of the product (unless overlap is off).
// Host (CPU) tensors; all buffers are allocated by the constructor (widths up to max_width).
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/halo_exchange.h"
#include "graph/local_graph.h"
#include "graph/shard.h"
#include "nn/profile.h"
#include "nn/sparse_adjacency.h"

namespace halogen::nn {

class SnapshotSequence {
 public:
  SnapshotSequence(comm::Communicator& comm, const graph::Shard& shard, graph::Normalization normalization,
                   int64_t max_width);
  ~SnapshotSequence();

  int64_t steps() const { return static_cast<int64_t>(steps_.size()); }
  int64_t num_owned() const { return num_owned_; }
  int64_t max_width() const { return max_width_; }
  graph::Normalization normalization() const { return normalization_; }

  void aggregate(int64_t t, Matrix<const float> x, Matrix<float> out);
  void aggregate_transpose(int64_t t, Matrix<const float> g, Matrix<float> out);
  // out[i] "=" S_{t[i]} x[i] for several steps in one pass (inputs known in advance, e.g. a window's features):
  // the exchange of step i+1 is in flight while step i's owned product runs (two scratch buffers), so only
  // the first exchange can be exposed. Consecutive steps must differ.
  void aggregate_many(const std::vector<int64_t>& t, const std::vector<Matrix<const float>>& x,
                      const std::vector<Matrix<float>>& out);

  // Timing (spmm, halo_total, halo_exposed) goes to `clock` when set; overlap off waits for the exchange
  // before the local product (for comparison).
  void set_clock(PhaseClock* clock) { clock_ = clock; }
  void set_overlap(bool overlap) { overlap_ = overlap; }
  // Bytes sent by this rank's exchanges since construction.
  int64_t bytes_sent() const;
  // Bytes the constructor allocates for a shard (memory estimates): adjacency, exchange buffers, scratch.
  int64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  struct Step;
  void spmm(const DeviceCsr& a, Matrix<const float> x, Matrix<float> out, bool accumulate);

  comm::Communicator& comm_;
  graph::Normalization normalization_;
  int64_t num_owned_ = 0, max_halo_ = 0, max_width_ = 0;
  std::vector<std::unique_ptr<Step>> steps_;
  Tensor x_scratch_;  // 2 x (n + max_halo, max_width): aggregate uses the first; aggregate_many both
  Tensor partial_;    // (max_halo, max_width)
  PhaseClock* clock_ = nullptr;
  bool overlap_ = true;
  int64_t allocated_bytes_ = 0;
};

// The Shard-shaped view of snapshot t of `shard` (its plan, CSR and degrees; owned ids shared, halo ids the
// snapshot's subset of the union halo): what graph::build_local_graph and comm::HaloExchange take.
graph::Shard snapshot_as_shard(const graph::Shard& shard, int64_t t);

}  // namespace halogen::nn
