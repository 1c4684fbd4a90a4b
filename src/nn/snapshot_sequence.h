#pragma once
// SnapshotSequence: the T time steps of a dynamic graph on one rank of P, as graph operators: one
// nn::DistributedAdjacency per step t (the normalised adjacency of the owned rows, graph/local_graph.h, built
// from the shard's ShardSnapshot t with that snapshot's own degrees, and the exchange of the snapshot's
// HaloPlan), plus the scratch they share. Ownership is the shard's, fixed over time, so a rank's rows [0, n_own)
// mean the same vertices at every step.
//
//   aggregate(t, x, out):           out (n, f) "=" S_t x           x: (n, f), the OWNED rows only
//   aggregate_transpose(t, g, out): out (n, f) "=" S_t^T g         g: (n, f); includes the other ranks' terms
// where S_t = Â_t (gcn: D^-1/2 (A_t + I) D^-1/2) or L~_t (chebyshev: -D^-1/2 A_t D^-1/2). Both are
// collective: every rank calls them for the same t in the same order. The owned rows of x are copied into one
// shared scratch buffer whose halo rows receive the exchange, overlapped with the owned part of the product
// (unless overlap is off). All buffers live on `device` (== comm.device()) and are allocated by the constructor
// (widths up to max_width); every kernel runs on `stream` (nullptr on the CPU).
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "graph/local_graph.h"
#include "graph/shard.h"
#include "nn/distributed_adjacency.h"
#include "nn/profile.h"

namespace halogen::nn {

class SnapshotSequence {
 public:
  SnapshotSequence(comm::Communicator& comm, const graph::Shard& shard, graph::Normalization normalization,
                   int64_t max_width, Device device = Device::cpu, kernels::Stream stream = nullptr);
  ~SnapshotSequence();

  int64_t steps() const { return static_cast<int64_t>(steps_.size()); }
  int64_t num_owned() const { return num_owned_; }
  int64_t max_width() const { return max_width_; }
  graph::Normalization normalization() const { return normalization_; }
  Device device() const { return device_; }
  kernels::Stream stream() const { return stream_; }

  void aggregate(int64_t t, Matrix<const float> x, Matrix<float> out);
  void aggregate_transpose(int64_t t, Matrix<const float> g, Matrix<float> out);
  // out[i] "=" S_{t[i]} x[i] for several steps in one pass (inputs known in advance, e.g. a window's features):
  // the exchange of step i+1 is in flight while step i's owned product runs (nn::forward_pipelined, two scratch
  // buffers), so only the first exchange can be exposed. Consecutive steps must differ.
  void aggregate_many(const std::vector<int64_t>& t, const std::vector<Matrix<const float>>& x,
                      const std::vector<Matrix<float>>& out);

  // Timing (spmm, halo_total, halo_exposed) goes to `clock` when set; overlap off waits for the exchange
  // before the local product (for comparison).
  void set_clock(PhaseClock* clock);
  void set_overlap(bool overlap);
  // Bytes sent by this rank's exchanges since construction.
  int64_t bytes_sent() const;
  // Bytes the constructor allocates for a shard (memory estimates): adjacencies, exchange buffers, scratch.
  int64_t allocated_bytes() const { return allocated_bytes_; }

 private:
  // Step t's operand: x (n, f) copied into scratch buffer `slot` (0 or 1), whose halo rows the exchange fills.
  Matrix<float> stage_input(int64_t t, Matrix<const float> x, int64_t slot);

  graph::Normalization normalization_;
  int64_t num_owned_ = 0, max_halo_ = 0, max_width_ = 0;
  Device device_;
  kernels::Stream stream_ = nullptr;
  std::vector<std::unique_ptr<DistributedAdjacency>> steps_;
  Tensor x_scratch_;          // 2 x (n + max_halo, max_width): aggregate uses the first; aggregate_many both
  Buffer<int32_t> identity_;  // (n) 0 .. n-1: copies x's owned rows into the scratch (kernels::gather_rows)
  int64_t allocated_bytes_ = 0;
};

}  // namespace halogen::nn
