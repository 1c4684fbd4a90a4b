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
// BF16 messages (--precision bf16): the same two exchanges on BF16 rows, half the bytes. forward: x is BF16
// with an even row stride (bf16_stride), packed and received in BF16. reverse: partial is BF16 (even stride);
// what arrives is widened and added into the FP32 grad_own (kernels::scatter_add_rows_bf16). The
// communicators move 4-byte words, so every BF16 message is a whole number of words: rows of an even stride.
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
  int64_t bytes_sent = 0;  // payload bytes this rank sent (FP32: 4 per element; BF16: 2, padding included)
  void reset() { *this = HaloStats{}; }
};

class HaloExchange {
 public:
  // `plan`: this rank's plan (empty offsets = nothing to exchange); the halo has plan.num_halo() rows after
  // `num_owned` owned rows. `max_width`: the widest row (floats) that will be exchanged; buffers are allocated
  // once here, on comm.device() (a BF16 exchange of up to max_width columns uses the same staging buffer).
  HaloExchange(Communicator& comm, const graph::HaloPlan& plan, int64_t num_owned, int64_t max_width);

  void start_forward(Matrix<float> x, kernels::Stream stream = nullptr);  // x: (n_own + n_halo, f), stride f
  void finish_forward(kernels::Stream stream = nullptr);

  void start_reverse(Matrix<const float> partial, kernels::Stream stream = nullptr);  // (n_halo, f), stride f
  void finish_reverse(Matrix<float> grad_own, kernels::Stream stream = nullptr);      // (n_own, f) "+="
  // BF16 messages: x (n_own + n_halo, f), partial (n_halo, f), both with stride bf16_stride(f); finish_forward
  // and finish_reverse (FP32 grad_own) as above.
  void start_forward(Matrix<Bf16> x, kernels::Stream stream = nullptr);
  void start_reverse(Matrix<const Bf16> partial, kernels::Stream stream = nullptr);
  // The row stride of a BF16 matrix that is exchanged: `width` rounded up to even (whole 4-byte words).
  static int64_t bf16_stride(int64_t width) { return (width + 1) / 2 * 2; }
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
  bool bf16_ = false;  // the exchange in flight moves BF16 rows
  double started_at_ = 0;
  HaloStats stats_;
};

}  // namespace halogen::comm
