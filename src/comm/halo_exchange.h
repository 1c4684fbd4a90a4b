#pragma once
// HaloExchange: moves rows between the owners of vertices and the ranks that hold them as halo, following one
// graph::HaloPlan (send_idx/send_offsets, recv_offsets; DESIGN.md "Files"): a shard's, a snapshot's, or any
// other plan built the same way. Written once for every Communicator: buffers live on comm.device() and
// packing uses kernels::gather_rows / scatter_add_rows.
//
//   forward:  x (n_own + n_halo, f):  x[n_own + recv_offsets[q] ..) <- rows x[send_idx[send_offsets[q] ..)] of
//             rank q. Halo rows land in place, so the layer input is one contiguous buffer.
//   reverse:  partial (n_halo, f): its rows [recv_offsets[q] ..) go back to their owner q, who adds them into
//             grad_own rows send_idx (scatter-add; duplicates accumulate). This is the halo part of A^T G.
//
// Usage (overlap): start_*(); <local product>; finish_*(). Between start and finish, the caller must not touch
// the halo rows of x (forward) or `partial` (reverse). At most one exchange is in flight per object.
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "graph/halo_plan.h"

namespace halogen::comm {

// Time accounting of the exchanges since the last reset (milliseconds, wall clock on the host):
//   total_ms   from the start of packing to the end of unpacking (includes the overlapped local work),
//   exposed_ms time the caller spent inside start_* / finish_* (packing, posting, waiting, unpacking): the
//              communication the local product did not hide.
struct HaloStats {
  double total_ms = 0;
  double exposed_ms = 0;
  int64_t bytes_sent = 0;
  void reset() { *this = HaloStats{}; }
};

class HaloExchange {
 public:
  // `plan`: this rank's plan (empty offsets = nothing to exchange); the halo has plan.num_halo() rows after
  // `num_owned` owned rows. `max_width`: the widest row (floats) that will be exchanged; buffers are allocated
  // once here, on comm.device().
  HaloExchange(Communicator& comm, const graph::HaloPlan& plan, int64_t num_owned, int64_t max_width);

  void start_forward(Matrix<float> x, kernels::Stream stream = nullptr);  // x: (n_own + n_halo, f), stride f
  void finish_forward(kernels::Stream stream = nullptr);

  void start_reverse(Matrix<const float> partial, kernels::Stream stream = nullptr);  // (n_halo, f), stride f
  void finish_reverse(Matrix<float> grad_own, kernels::Stream stream = nullptr);      // (n_own, f) "+="
  // Lets the exchange in flight advance without waiting (Communicator::progress); nothing when none is.
  void progress() {
    if (in_flight_) comm_.progress(*in_flight_);
  }

  int64_t num_owned() const { return num_owned_; }
  int64_t num_halo() const { return num_halo_; }
  int64_t num_send() const { return static_cast<int64_t>(send_offsets_.back()); }
  // Bytes of the buffers this object allocated (memory estimates).
  static int64_t buffer_bytes(int64_t num_send, int64_t max_width);

  HaloStats& stats() { return stats_; }

 private:
  Communicator& comm_;
  int64_t num_owned_ = 0, num_halo_ = 0, max_width_ = 0;
  std::vector<int64_t> send_offsets_, recv_offsets_;
  Buffer<int32_t> send_idx_;   // (S) on comm.device()
  Tensor staging_;             // (S, max_width): packed rows (forward) / received partial sums (reverse)
  std::unique_ptr<Request> in_flight_;
  int64_t width_ = 0;
  double started_at_ = 0;
  HaloStats stats_;
};

}  // namespace halogen::comm
