#pragma once
// GatConv: one graph attention layer (Velickovic et al.; PyG GATConv with add_self_loops=True) on one rank of P.
// K heads of width F, C = K * F:
//   H = X W                                   (n + h, C)  W: "layer<l>.weight" (in, C)
//   s_src[j, k] = a_src[k] . H[j, head k],  s_dst[i, k] = a_dst[k] . H[i, head k]
//                                             a_src, a_dst: "layer<l>.att_src", "layer<l>.att_dst" (K, F)
//   e_ij^k = leaky_relu(s_dst[i, k] + s_src[j, k], 0.2)    over the AttentionGraph's edges (self-loops included)
//   alpha_ij^k = softmax_j(e_ij^k)  (per destination row i, stable)
//   alpha~ = attention dropout of alpha (edge_dropout, keyed by the edge's global (dst, src) ids)
//   out[i, head k] = sum_j alpha~_ij^k H[j, head k]
//   concat: z = out (n, C);  mean (an output layer): z = (1/K) sum_k out[:, head k] (n, F)
// The bias ("layer<l>.bias", (C) or (F)) is the model's (its epilogue adds it), as for GraphConv.
//
// Fused attention (kernels::gat_attention / gat_attention_backward, contracts in kernels/ops.h): the forward
// computes e, alpha, alpha~ and out in ONE pass over each destination row (online softmax: a running max and
// sum per head, rescaling the accumulator when the max grows) and keeps per row and head only the max and
// 1 / sum (row_state_). The backward recomputes every edge's e, alpha and mask from s_dst, s_src, those and the
// global ids: pass 1 by destination row, S_i = sum_j alpha~_ij (dOut_i . H_j), then (a second walk over the
// row) dLoss/ds_dst_i; pass 2 by source over the transpose, dLoss/dH_j = sum_i alpha~_ij dOut_i and
// dLoss/ds_src_j. Row-parallel, no atomics: deterministic and thread-count independent. No (E, K) tensor:
// per attention edge only the AttentionGraph's 8 bytes; per layer 5 K floats per owned row (scratch_bytes).
//
// Feature dropout (per_head_dropout, --gat-dropout original: the reference implementation of Velickovic et al.,
// whose attn_head drops its input and its transformed features; the model then drops nothing itself). With
// p = context.gat_feature_dropout > 0:
//   H[:, head k] = dropout_k(X) W[:, head k]        an independent input mask per head
//   scores from H as above;  messages from H~ = dropout_m(H):  out[i, head k] = sum_j alpha~_ij^k H~[j, head k]
// Keys: (seed, rng::stream_id(kGatFeatureDropout, epoch, layer, 1 + k)) for head k's input and (..., 0) for
// H~, with the element index gid * width + column (kernels::dropout), so P ranks draw what one rank draws.
// Without per_head_dropout (--gat-dropout pyg, PyG's GATConv example) the model drops the layer's input once
// for all heads and H's rows are the messages. Evaluation (p = 0) is the same for both.
//
// Distributed: the halo rows of [H | s_src] (n + h, C + K; H~ in place of H with feature dropout) arrive in ONE forward exchange (the adjacency's
// gather_halo; s_dst runs while it is in flight), so every edge's score and message is computed where its
// destination is owned, exactly as on one rank. Backward: the halo rows of [dLoss/dH | dLoss/ds_src] (the
// source-side sums of this rank's edges) go back to their owners in ONE reverse exchange (scatter_halo) and
// are added there; the a_dst term runs while it is in flight.
//
// Shapes (n = n_own, h = n_halo): forward(x (n + h, in), z (>= n rows, out)): rows [0, n) of z "=" the layer's
// output without bias; x's halo rows are not read. backward(x, grad_z (n, out), grad_x (n, in) "=", when
// wanted): parameter gradients "+=". forward must precede backward with the same x; backward reuses the
// forward's attention-dropout parameters (so the same mask). Collective, like GraphConv.
#include <cstdint>
#include <string>

#include "nn/attention_graph.h"
#include "nn/distributed_adjacency.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

struct LayerContext;

class GatConv {
 public:
  static constexpr float kNegativeSlope = 0.2f;

  GatConv(int layer, int64_t in, int64_t heads, int64_t head_width, bool concat, ParameterStore& store,
          bool per_head_dropout = false);
  // Scratch on adjacency.device(), after store.allocate(); `graph` and `adjacency` must outlive the layer.
  void allocate(DistributedAdjacency& adjacency, const AttentionGraph& graph);

  // A sparse input (layer 0 with per_head_dropout; the model's nonzero features, nn/model.h): X as CSR and its
  // transpose, whose values arrays (`dropped`, `t_values`) the layer rewrites: per head, dropped = the head's
  // dropout of `values` keyed by `keys` (gid * in + column: the dense decisions, so the masks are the dense
  // path's), and t_values = dropped gathered by `t_order`. Products with W use spmm: work on the nonzeros only.
  // With dropout off the model's values (its input dropout with p = 0) are used as they are.
  struct SparseInput {
    kernels::CsrView x, x_t;         // (n, in) and (in, n); values: dropped, t_values
    Matrix<const float> values;      // (nnz, 1)
    Span<const int64_t> keys;        // (nnz)
    Span<const int32_t> t_order;     // (nnz): x_t's k-th value is dropped[t_order[k]]
    Matrix<float> dropped, t_values;  // (nnz, 1)
  };
  // Before allocate(): whether set_sparse_input will be called (the dense per-head input buffer is then not
  // needed).
  void expect_sparse_input() { expect_sparse_ = true; }
  // --precision bf16: the exchange of H and its source scores rounds them to BF16 (staging: (n + h) rows, stride
  // bf16_stride of at least exchange_width; DistributedAdjacency::gather_halo_rounding; the adjacency carries
  // BF16 messages, so the backward's partial sums go out in BF16 too).
  void set_bf16_staging(Matrix<Bf16> staging) {
    bf16_staging_ = staging;
    bf16_ = true;
  }
  void set_sparse_input(const SparseInput& input);

  void forward(Matrix<const float> x, Matrix<float> z, const LayerContext& context);
  void backward(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                const LayerContext& context);

  int64_t out() const { return concat_ ? heads_ * head_width_ : head_width_; }
  int bias_index() const { return bias_; }

  // Floats per row of the exchange: [H | s_src].
  static int64_t exchange_width(int64_t heads, int64_t head_width) { return heads * head_width + heads; }
  static int64_t parameter_count(int64_t in, int64_t heads, int64_t head_width, bool concat) {
    return in * heads * head_width + 2 * heads * head_width + (concat ? heads * head_width : head_width);
  }
  // Bytes allocate() takes (`in`: the input width; read with per_head_dropout).
  static int64_t scratch_bytes(int64_t heads, int64_t head_width, bool concat, int64_t num_owned, int64_t num_halo,
                               int64_t edges, int64_t in = 0, bool per_head_dropout = false,
                               bool sparse_input = false);

 private:
  int64_t heads_, head_width_;
  bool concat_;
  int layer_;
  int64_t in_;
  ParameterStore& store_;
  int weight_ = -1, att_src_ = -1, att_dst_ = -1, bias_ = -1;
  DistributedAdjacency* adjacency_ = nullptr;
  Matrix<Bf16> bf16_staging_;
  bool bf16_ = false;
  const AttentionGraph* graph_ = nullptr;
  int64_t num_owned_ = 0, num_halo_ = 0;
  bool per_head_dropout_;
  bool expect_sparse_ = false, sparse_ = false;
  SparseInput sparse_input_;
  kernels::EpilogueParams attention_;  // the last forward's attention dropout (the backward's mask)
  float feature_dropout_ = 0.0f;       // the last forward's feature dropout (per_head_dropout), and its keys
  uint64_t feature_seed_ = 0;
  uint32_t feature_epoch_ = 0;
  std::string forward_range_, backward_range_;
  // Scratch, allocated once:
  //   hs_ (n + h, C + K): [H | s_src], halo rows received
  //   row_state_ (n, 4K): [s_dst | max | 1 / sum | S] per row and head: the softmax's statistics
  //   (kernels::gat_attention) and the backward's S_i = sum_j alpha~_ij (dOut_i . H_j), side by side so that the
  //   backward's pass by source gathers one row of 4K floats per edge instead of three arrays' rows
  //   heads_out_ (n, C): mean layers' per-head output (and the per-head gradient in the backward)
  //   grad_hs_ (n + h, C + K): [dLoss/dH | dLoss/ds_src], halo rows sent back;  grad_s_dst_ (n, K)
  //   per_head_dropout: h_ (n, C) H before its dropout (hs_ holds H~);  x_head_ (n, in) one head's dropped input
  //   (and, in the backward, one head's input gradient; not with a sparse input)
  Tensor hs_, row_state_, heads_out_, grad_hs_, grad_s_dst_, h_, x_head_;

  Matrix<float> row_state(int64_t begin, int64_t end) {  // columns [begin, end) of row_state_, strided
    const Matrix<float> m = row_state_.matrix();
    return Matrix<float>{m.data + begin, m.rows, end - begin, m.stride, m.device};
  }
  Matrix<float> s_dst() { return row_state(0, heads_); }
  Matrix<float> stats() { return row_state(heads_, 3 * heads_); }
  Matrix<float> row_dot() { return row_state(3 * heads_, 4 * heads_); }
  kernels::EpilogueParams feature_params(int stream_tag) const;  // 0: H~, 1 + k: head k's input
};

}  // namespace halogen::nn
