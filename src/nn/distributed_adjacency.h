#pragma once
// DistributedAdjacency: one sparse operator S of a graph whose vertices are spread over P ranks, applied on one
// rank to a matrix of its rows. The one distributed SpMM of the engine: GraphConv (GCN, GraphSAGE) and every
// temporal model (through SnapshotSequence, one object per time step) use it.
//
// S's rows are this rank's n owned vertices; its columns are split (graph/local_graph.h) into A_own (n x n, owned
// columns) and A_halo (n x h, the plan's halo rows, in recv order). It owns A_own, A_halo and their transposes on
// `device` (nn::DeviceCsr: on the CPU an unweighted gcn/mean/sum matrix keeps row and column factors instead of
// values), the comm::HaloExchange of its graph::HaloPlan, and a (h, max_width) partial-sum buffer.
//
//   forward(x, out, extra):    out (n, f) "=" S x
//       x: (n + h, f), stride f; rows [0, n) are the input; rows [n, n + h) are OVERWRITTEN with the owners'
//       rows (the forward exchange lands in place).
//       start exchange -> out = A_own x[0, n) -> extra() -> wait -> out += A_halo x[n, n + h)
//   transpose(g, out, extra):  out (n, f) "=" S^T g, the other ranks' terms included
//       g: (n, f); out: stride f.
//       partial = A_halo^T g -> start reverse exchange -> out = A_own^T g -> extra() -> wait, out[send_idx] +=
//       received partials (scatter-add)
//   forward_overwriting(x, out, extra), transpose_overwriting(g, out, extra): the same results, bit for bit, for
//       an input nothing reads afterwards (scratch): its rows may be left multiplied by the matrices' column
//       factor. Where the matrices keep factors instead of values (CPU, unweighted GCN: Â = D^-1/2 A' D^-1/2),
//       the input's owned rows are scaled once (kernels::scale_rows; a forward's halo rows arrive scaled by
//       their owners, whose factor is the same, from the global degree) and the products apply only the row
//       factor: one sequential pass over x instead of a factor gathered at random per nonzero (on RMAT-22 the
//       gather made a width-16 product ~1.9x slower). Otherwise they are forward and transpose.
//   forward_local(x, out, extra): out (n, f) "=" S x with x's halo rows as they are (no exchange, not
//       collective): the same products in the same order as forward, so after a forward on x (whose halo rows
//       nothing has written since) it gives forward's result bit for bit. Recomputation (ModelConfig::recompute).
//   gather_halo(x, extra):     the forward exchange alone (no product): x's halo rows [n, n + h) "=" the
//       owners' rows, extra() running while it is in flight. For layers whose product is not S's (GAT: per-edge
//       attention weights over the same halo).
//   scatter_halo(partial, out, extra):  the reverse exchange alone: out (n, f) "+=" the partial sums (h, f)
//       that every rank computed for our rows (partial: this rank's sums for its halo rows, sent to their
//       owners), extra() running while it is in flight. With BF16 messages the partial sums go out in BF16.
// BF16 (--precision bf16; constructed with bf16_messages):
//   forward_bf16(x, out, extra): forward with x in BF16 ((n + h, f), stride comm::HaloExchange::bf16_stride(f)):
//       the exchange moves BF16 rows, the products widen them and accumulate in FP32 (kernels::spmm_bf16);
//       out is FP32.
//   transpose (and transpose_overwriting): the partial sums A_halo^T g are rounded to BF16 before they are sent
//       (half the bytes); the owners widen and add them. g and out stay FP32.
// extra (optional): work that takes no part in the exchange, run while it is in flight (e.g. GraphSAGE's
// X W_self); it runs after `out` holds the owned product and may add (+=) into `out`.
// Overlap off (set_overlap(false), for comparison): the exchange is waited for before the owned product (the
// transpose zeroes `out`, waits and scatter-adds, then adds A_own^T g), so nothing hides it.
//
// Collective: every rank calls the same operations on its object of the same plan in the same order, even a
// rank without vertices. Every kernel and Communicator call is enqueued on `stream` (nullptr on the CPU). With a
// clock set, products are timed as Phase::spmm, the exchange as halo_exposed (inside its start and finish:
// packing, posting, waiting, unpacking) and halo_total (from start to the end of finish; only when this rank
// moves rows, so a rank without halo shows no halo time).
#include <cstdint>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/halo_exchange.h"
#include "core/function_ref.h"
#include "graph/halo_plan.h"
#include "graph/local_graph.h"
#include "nn/profile.h"
#include "nn/sparse_adjacency.h"

namespace halogen::nn {

using OverlapWork = FunctionRef<void()>;

class DistributedAdjacency {
 public:
  // `local`: S split by columns (its num_halo must equal plan.num_halo()); `max_width`: the widest matrix that
  // will be multiplied (floats per row); every buffer is allocated here, on `device` (== comm.device()).
  // `bf16_messages`: BF16 halo messages (above); allocates the BF16 partial-sum buffer.
  DistributedAdjacency(comm::Communicator& comm, const graph::LocalGraph& local, const graph::HaloPlan& plan,
                       int64_t max_width, Device device, kernels::Stream stream = nullptr,
                       bool bf16_messages = false);
  DistributedAdjacency(const DistributedAdjacency&) = delete;
  DistributedAdjacency& operator=(const DistributedAdjacency&) = delete;

  void forward(Matrix<float> x, Matrix<float> out, OverlapWork extra = {});
  void forward_overwriting(Matrix<float> x, Matrix<float> out, OverlapWork extra = {});
  void transpose_overwriting(Matrix<float> g, Matrix<float> out, OverlapWork extra = {});
  void forward_local(Matrix<const float> x, Matrix<float> out, OverlapWork extra = {});
  void transpose(Matrix<const float> g, Matrix<float> out, OverlapWork extra = {});
  void forward_bf16(Matrix<Bf16> x, Matrix<float> out, OverlapWork extra = {});
  // forward_bf16 of an FP32 matrix: x_own (n, f) rounded to BF16 into the owned rows of staging_view(staging, f)
  // (its halo rows receive the exchange), timed as elementwise work. `staging`: the caller's BF16 staging buffer,
  // n + h rows of stride >= bf16_stride(f). `scratch`: nothing reads x_own afterwards, so where
  // forward_overwriting would scale the input (CPU, implicit values) its rows are scaled by the column factor
  // before rounding and the products apply only the row factor (the halo rows arrive scaled by their owners
  // alike).
  void forward_rounding(Matrix<float> x_own, Matrix<Bf16> staging, Matrix<float> out, bool scratch,
                        OverlapWork extra = {});
  // forward_rounding with scratch, its input staged by the caller without an FP32 matrix (a GCN first layer's
  // BF16 features, dropped out, scaled and rounded in one pass by kernels::dropout_scale_round_bf16): the caller
  // fills staged_input_rows(staging, width) with bf16(x_own[r, :] * staged_input_scale()[r]) (no scale when
  // that is empty), as forward_rounding would, then calls forward_staged.
  Matrix<Bf16> staged_input_rows(Matrix<Bf16> staging, int64_t width) const;
  Span<const float> staged_input_scale() const;
  void forward_staged(Matrix<Bf16> staging, int64_t width, Matrix<float> out, OverlapWork extra = {});
  // forward_rounding for an input already in BF16 (a layer's BF16 input, nn::GraphConv::set_bf16_input): its
  // owned rows are copied (exactly) into the staging buffer, and the product scales them as forward's does,
  // so it gives bit for bit forward_rounding without scratch of float(x_own).   x_own: (n_own, width)
  void forward_bf16_input(Matrix<const Bf16> x_own, Matrix<Bf16> staging, Matrix<float> out, OverlapWork extra = {});
  bool bf16_messages() const { return bf16_messages_; }
  void gather_halo(Matrix<float> x, OverlapWork extra = {});
  // gather_halo in BF16 (--precision bf16, GAT): x's owned rows are rounded to BF16 (into staging_view(staging,
  // x.cols), and in place in x, so that the owner uses the values the others receive), the BF16 rows are
  // exchanged, and the halo rows widened into x's. `staging` as forward_rounding's.
  void gather_halo_rounding(Matrix<float> x, Matrix<Bf16> staging, OverlapWork extra = {});
  void scatter_halo(Matrix<const float> partial, Matrix<float> out, OverlapWork extra = {});

  void set_overlap(bool overlap) { overlap_ = overlap; }
  void set_clock(PhaseClock* clock) { clock_ = clock; }  // nullptr: untimed
  bool overlap() const { return overlap_; }

  int64_t num_owned() const { return num_owned_; }
  int64_t num_halo() const { return num_halo_; }
  int64_t max_width() const { return max_width_; }
  Device device() const { return device_; }
  kernels::Stream stream() const { return stream_; }
  // The exchange (its HaloStats: bytes sent, host-side time).
  comm::HaloExchange& exchange() { return *exchange_; }
  const comm::HaloExchange& exchange() const { return *exchange_; }

  // Bytes the constructor allocates on `device` (memory estimates): `entries` = nnz(A_own) + nnz(A_halo),
  // `num_send` = plan.num_send(), `layout` = A_own's and A_halo's value layout (value_layout_of the
  // normalisation; the transposes have the transposed one), A_own^T stored.
  static int64_t bytes_for(int64_t num_owned, int64_t num_halo, int64_t entries, int64_t num_send,
                           int64_t max_width, ValueLayout layout, Device device);
  // Its two parts: the matrices (`halo_entries` = nnz(A_halo); A_own's transpose not stored when
  // `own_symmetric`, graph::LocalGraph::a_own_symmetric; an implicit layout keeps the factors instead of the
  // values on the CPU, nn/sparse_adjacency.h) and the exchange (its buffers and the partial sums).
  static int64_t matrix_bytes_for(int64_t num_owned, int64_t num_halo, int64_t entries, int64_t halo_entries,
                                  bool own_symmetric, ValueLayout layout, Device device);
  static int64_t exchange_bytes_for(int64_t num_halo, int64_t num_send, int64_t max_width,
                                    bool bf16_messages = false);
  // Whether the backward multiplies by A_own itself (it equals its transpose; no copy is stored).
  bool own_symmetric() const { return own_symmetric_; }

 private:
  friend void forward_pipelined(const std::vector<DistributedAdjacency*>& adjacencies,
                                FunctionRef<Matrix<float>(int64_t)> input_of, const std::vector<Matrix<float>>& out);
  // `input_scaled`: x's rows are already multiplied by a's column factor (view(true)).
  void product(const DeviceCsr& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
               bool while_exchanging = false, bool input_scaled = false);
  void product(const DeviceCsr& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate,
               bool while_exchanging = false, bool input_scaled = false);
  void forward_bf16_impl(Matrix<Bf16> x, Matrix<float> out, OverlapWork extra, bool input_scaled);
  // The (n + h, width) view with stride bf16_stride(width) at the start of a caller's staging buffer.
  Matrix<Bf16> staging_view(Matrix<Bf16> staging, int64_t width) const;
  // Starts the reverse exchange of the partial sums (h, f): rounded to BF16 first with BF16 messages.
  void start_reverse(Matrix<const float> partial);
  void forward_impl(Matrix<float> x, Matrix<float> out, OverlapWork extra, bool input_scaled);
  void transpose_impl(Matrix<const float> g, Matrix<float> out, OverlapWork extra, bool input_scaled);
  bool moves_rows() const;
  void begin(Phase phase);
  void end(Phase phase);
  void start_forward(Matrix<float> x);
  void finish_forward();
  void check_forward(Matrix<const float> x, Matrix<const float> out) const;

  comm::Communicator& comm_;
  int64_t num_owned_ = 0, num_halo_ = 0, max_width_ = 0;
  Device device_;
  kernels::Stream stream_ = nullptr;
  const DeviceCsr& own_transpose() const { return own_symmetric_ ? own_ : own_t_; }

  DeviceCsr own_, halo_, own_t_, halo_t_;  // own_t_ is empty when own_symmetric_
  bool own_symmetric_ = false;
  // The *_overwriting calls scale their input (see above): the forward's owned-row factor is own_'s column
  // factor (A_halo's columns carry the owners' same factors); the transpose's is own_transpose()'s, which
  // A_halo^T shares.
  bool scale_forward_input_ = false, scale_transpose_input_ = false;
  std::unique_ptr<comm::HaloExchange> exchange_;
  Tensor partial_;  // (h, max_width): A_halo^T g, sent back to the owners
  bool bf16_messages_ = false;
  Buffer<Bf16> partial_bf16_;  // (h, bf16_stride(max_width)) with bf16_messages: partial_ rounded, sent
  bool overlap_ = true;
  PhaseClock* clock_ = nullptr;
};

// out[i] "=" S_i x_i for i = 0 .. m-1 in one pass, S_i = *adjacencies[i] (the same communicator and stream):
// the exchange of step i+1 is in flight while step i's owned product runs, so only the first exchange can be
// exposed. input_of(i) returns x_i ((n + h_i, f_i), stride f_i, as in forward: halo rows overwritten) with its
// owned rows filled; it is called once per i in ascending order, after step i-2 has finished (so two buffers
// used in turn suffice). out[i]: (n, f_i). Consecutive adjacencies must differ (one exchange in flight per
// object). With overlap off (on adjacencies[0]) or m == 1: m forward calls. Collective, like forward.
// Timing: halo_total spans the whole pass, halo_exposed the time inside each start and finish.
void forward_pipelined(const std::vector<DistributedAdjacency*>& adjacencies,
                       FunctionRef<Matrix<float>(int64_t)> input_of, const std::vector<Matrix<float>>& out);

}  // namespace halogen::nn
