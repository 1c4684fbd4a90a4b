#pragma once
// GraphConv: one graph convolution layer on one rank of P. The distributed product with the adjacency (halo
// exchange overlapped with the owned part) is nn::DistributedAdjacency's; this file holds the dense side.
//   gcn:   Z = Â X W + b                         (Â = GCN-normalised adjacency with self-loops)
//   sage:  Z = X W_self + M X W_neigh + b        (M = mean over neighbours; GraphSAGE-mean)
//   gin:   Z = relu(((1 + eps) X + S X) W + b_inner) W_out + b   (S = sum over neighbours, no self-loop; Xu
//          et al.'s GIN-0 / GIN-eps with a 2-layer MLP, no batch norm); eps = 0 fixed, or learned
//          ("layer<l>.eps")
//   gat:   multi-head graph attention (nn/gat_conv.h; hidden layers concatenate heads, an output layer
//          averages them); the layer delegates to its GatConv
//   appnp: Z = X W + b                           (one linear layer of APPNP's MLP; no graph: the model
//   propagates
//          its logits afterwards, nn/model.h)
// Narrower side first: when out < in, T = X W is computed first and T (width out) is exchanged, then
// Z = Â T; otherwise X (width in) is exchanged and Z = (Â X) W. So the exchange always moves the narrower
// matrix. GIN's aggregation is linear too ((1 + eps) X + S X) W = (1 + eps) XW + S XW): it exchanges the
// narrower of X (width in) and X W (width hidden = W's columns), then applies relu, b_inner and W_out
// locally.
//
// Shapes (n = n_own, h = n_halo):
//   x: (n + h, in)  layer input; rows [0, n) valid; rows [n, n+h) are OVERWRITTEN by the halo exchange when
//                   the layer aggregates first; a transform-first layer reads only rows [0, n) (x may have n).
//   z: (n + h, out) or (n, out): rows [0, n) "=" Â X W (+ X W_self), WITHOUT the bias (the caller fuses bias
//                   with relu/dropout, or calls add_bias for the last layer).
// Backward (after forward on the same x): given grad_z (n, out) = dLoss/dZ,
//   grad W, grad W_self, grad b: "+=" into the ParameterStore's gradient views;
//   grad_x (n, in): "=" dLoss/dX for the owned rows (when requested; the halo rows' contributions have been
//   sent back to their owners and the contributions of other ranks to our rows added).
// Every rank of the job must call forward/backward the same number of times in the same order (the
// exchanges pair up across ranks), even a rank with no vertices.
#include <cstdint>
#include <string>

#include <memory>

#include "core/function_ref.h"
#include "nn/attention_graph.h"
#include "nn/distributed_adjacency.h"
#include "nn/gat_conv.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

enum class ConvKind { gcn, sage, gin, appnp, gat };
// "gcn", "sage", "gin", "appnp", "gat" (the --model names), and back (UserError naming `option` for another name).
const char* conv_kind_name(ConvKind kind);
ConvKind parse_conv_kind(const std::string& name, const char* option = "--model");

// What a layer needs from its model for one call. Every kernels:: call of the layer is enqueued on `stream`
// (nullptr on the CPU; the adjacency's stream) and timed with `clock` (nn/profile.h: gemm, elementwise; the
// adjacency times spmm, halo_exposed and halo_total on its own clock, set by the model).
struct LayerContext {
  PhaseClock* clock = nullptr;
  kernels::Stream stream = nullptr;
  // gat: the attention dropout of this forward (dropout 0: off), keyed by (seed, rng_stream) (kernels::edge_dropout).
  kernels::EpilogueParams attention{false, 0.0f, 0, 0};
  // gat with per-head dropout (nn/gat_conv.h): the dropout p of the layer's input (a mask per head) and of its
  // transformed features in this forward (0: off), keyed by (seed, epoch, layer).
  float gat_feature_dropout = 0.0f;
  uint64_t seed = 0;
  uint32_t epoch = 0;
  // backward: the caller has already added this layer's bias gradient (fused into the backward of the
  // epilogue that added the bias: kernels::relu_dropout_backward), so the layer does not.
  bool bias_gradient_done = false;
  // forward: a backward follows (training); false for an evaluation forward, which then keeps no BF16 copy of
  // Â X (GraphConv::keeps_bf16_aggregate).
  bool keep_for_backward = true;
  // forward of a layer with a BF16 output (GraphConv::set_bf16_output): called with each block of at most
  // GraphConv::kWidenRows rows of Z, in row order: the first row and the block (rows, out) in FP32, without the
  // bias. The caller applies its epilogue to the block and keeps it (in BF16) before the next block overwrites it.
  FunctionRef<void(int64_t, Matrix<float>)> output_block;
};

class GraphConv {
 public:
  // Registers its tensors in `store`: "layer<l>.weight" (in, out; gin: in, gin_hidden),
  // "layer<l>.weight_self" (sage), gin: "layer<l>.inner_bias" (gin_hidden), "layer<l>.weight_out"
  // (gin_hidden, out) and, with gin_learn_eps, "layer<l>.eps" (1, 1; initialised to 0, registered as a bias);
  // then "layer<l>.bias" (out).
  // gat: `out` is gat_heads * (width per head) when gat_concat (a hidden layer), else the width per head (the
  // heads are averaged); its tensors are GatConv's. gat_per_head_dropout: GatConv's per_head_dropout.
  GraphConv(ConvKind kind, int layer, int64_t in, int64_t out, ParameterStore& store, int64_t gin_hidden = 0,
            bool gin_learn_eps = false, int64_t gat_heads = 1, bool gat_concat = true,
            bool gat_per_head_dropout = false);
  // The floats of a layer's scratch, by lifetime (not gat, whose scratch is GatConv's):
  //   kept:     written by the forward and read by the backward: the layer's own buffers.
  //   forward:  used inside one forward call only (transform-first: T = X W with its halo rows);
  //   backward: used inside one backward call only (the gradient of T or of Â X; gin: also of its MLP's h).
  // The forward and backward parts can live in one workspace shared by all layers of a model: no two layers
  // run at once, and nothing in them survives a call.
  //   kept_bf16: BF16 values kept (not floats): Â X under bf16_aggregate.
  struct ScratchPlan {
    int64_t kept = 0, forward = 0, backward = 0, kept_bf16 = 0;
    int64_t transient() const { return forward > backward ? forward : backward; }
  };
  // `recompute` (a layer that aggregates first, with recompute_aggregate()): Â X moves from kept to forward,
  // and the backward recomputes it into its gradient's slot (read by the weight gradient before that gradient
  // is written), so the backward needs no more.
  // `bf16_aggregate` (a layer that aggregates first, with set_bf16_aggregate()): the FP32 Â X moves from kept to
  // forward, and a BF16 copy of it is kept (kept_bf16); the backward widens it kWidenRows rows at a time into
  // the first rows of its gradient's slot (a layer 0 that computes no input gradient needs only those rows:
  // widen_floats).
  static ScratchPlan scratch_plan(ConvKind kind, int64_t in, int64_t out, int64_t num_owned, int64_t num_halo,
                                  int64_t gin_hidden = 0, bool gin_learn_eps = false, bool recompute = false,
                                  bool bf16_aggregate = false);
  // Rows of a BF16 matrix widened (or of Z formed) per block: the kept Â X per weight-gradient product (a
  // k-split of X^T G, accumulated with beta 1), and the BF16 inputs and outputs below.
  static constexpr int64_t kWidenRows = 8192;
  // The rows of the largest block of n rows, and f(first, rows) for each block of [0, n), in row order.
  static int64_t block_rows(int64_t n) { return n < kWidenRows ? n : kWidenRows; }
  template <typename F>
  static void for_each_block(int64_t n, F&& f) {
    for (int64_t first = 0; first < n; first += kWidenRows) f(first, block_rows(n - first));
  }
  // The backward scratch of the widening alone: block_rows(num_owned) rows of the exchange width.
  static int64_t widen_floats(ConvKind kind, int64_t in, int64_t out, int64_t num_owned, int64_t gin_hidden = 0) {
    return block_rows(num_owned) * exchange_width(kind, in, out, gin_hidden);
  }
  // Recomputation (before allocate()): a GCN, SAGE or GIN layer that aggregates first keeps no Â X between its
  // forward and backward; the backward recomputes it from x (DistributedAdjacency::forward_local: x's halo rows
  // still hold what the forward's exchange brought, so no exchange), bit for bit the forward's. It needs x in
  // the backward with its halo rows intact: not for a first layer whose input lives in the model's workspace.
  // No effect on other layers.
  void set_recompute_aggregate(bool recompute) { recompute_ = recompute; }
  bool recomputes_aggregate() const {
    return recompute_ && !bf16() && !transform_first() && !gat_ && kind_ != ConvKind::appnp;
  }
  // --precision bf16 (before allocate(), after set_bf16_staging): a GCN, SAGE or GIN layer that aggregates first
  // keeps its Â X for the backward in BF16 (half the bytes) instead of FP32. The forward multiplies W with the
  // FP32 Â X (in the workspace), so its result is unchanged; the weight gradient reads the BF16 copy widened
  // (exactly) back to FP32. The model decides (Model::keeps_bf16_aggregate): not for a layer 0 whose FP32
  // input shares the workspace with the FP32 Â X. No effect on other layers.
  void set_bf16_aggregate(bool keep) { bf16_aggregate_ = keep; }
  bool keeps_bf16_aggregate() const {
    return bf16_aggregate_ && bf16_ && !transform_first() && !gat_ && kind_ != ConvKind::appnp;
  }
  // --precision bf16, the layers' outputs X_l in BF16 (Model::keeps_bf16_activation; not GAT; after
  // set_bf16_staging; set_bf16_output before allocate(), the others before the first forward):
  //   set_bf16_input: the layer's input is `x` (n_own, in) in BF16, owned by the model: forward and backward
  //     read it instead of their FP32 x (which may be empty). The products with W (and W_self) widen it
  //     kWidenRows rows at a time into the layer's blocks (exactly) and multiply them with the FP32 BLAS; an
  //     aggregate-first layer copies it into the staging buffer for the adjacency (DistributedAdjacency::
  //     forward_bf16_input).
  //   set_bf16_output: a layer whose Z comes from gemms (can_give_bf16_output) forms Z kWidenRows rows at a
  //     time in its blocks and hands each block to LayerContext::output_block (the model's epilogue), instead of
  //     writing a (n_own, out) z.
  //   set_bf16_blocks: the FP32 rows these use, block_floats() of them (shared by the model's layers: nothing in
  //     them survives a call).
  // Every kind but GAT; an output only where Z is formed by gemms: not by the SpMM of a transform-first GCN or
  // SAGE layer (GIN's Z is h W_out, APPNP's X W).
  static bool can_take_bf16_input(ConvKind kind) { return kind != ConvKind::gat; }
  static bool can_give_bf16_output(ConvKind kind, int64_t in, int64_t out) {
    return kind == ConvKind::appnp || kind == ConvKind::gin ||
           (can_take_bf16_input(kind) && !transform_first(kind, in, out));
  }
  void set_bf16_input(Matrix<const Bf16> x);
  void set_bf16_output(bool bf16_output);
  bool bf16_output() const { return bf16_output_; }
  // Floats of the blocks a layer with these BF16 sides uses: block_rows(n) rows of the input's width (when its
  // input is BF16) and of its output's (when its output is).
  static int64_t block_floats(int64_t in, int64_t out, int64_t num_owned, bool bf16_input, bool bf16_output) {
    return block_rows(num_owned) * ((bf16_input ? in : 0) + (bf16_output ? out : 0));
  }
  void set_bf16_blocks(Span<float> blocks) { blocks_ = blocks; }
  // Rows [first, first + rows) of the BF16 input widened (exactly) into the first floats of the blocks, untimed
  // (the model's relu backward and non-finite check read the layer's input, X_l, this way too).
  Matrix<const float> widen_input(int64_t first, int64_t rows, kernels::Stream stream) const;

  // Allocates the layer's kept buffers (after store.allocate()) on adjacency.device(); the forward and backward
  // ones are views of `workspace` (at least scratch_plan(...).transient() floats on that device, shared with
  // other layers: it holds nothing between calls), or the layer's own buffers when `workspace` is empty. The
  // layer multiplies with `adjacency` (its max_width at least exchange_width()), which must outlive it (appnp:
  // not used).
  // gat: `attention` (its edges) is required and must outlive the layer; `workspace` is not used.
  void allocate(DistributedAdjacency& adjacency, const AttentionGraph* attention = nullptr,
                Span<float> workspace = {});
  // Whether the backward reads the forward's input x: false only for a GCN or GIN (fixed eps) layer that
  // aggregates first (its weight gradient reads Â X, its input gradient Â^T of a gradient), so that a first
  // layer's input can live in a shared workspace too.
  static bool backward_reads_input(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden, bool gin_learn_eps);
  // The width this layer multiplies with the adjacency (0: appnp, which has none).
  static int64_t exchange_width(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden = 0);
  // Trainable floats of one layer.
  static int64_t parameter_count(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden = 0,
                                 bool gin_learn_eps = false);

  void forward(Matrix<float> x, Matrix<float> z, const LayerContext& context);
  // grad_z is not read after the call, and a GCN layer may leave its rows scaled (DistributedAdjacency::
  // transpose_overwriting).
  void backward(Matrix<const float> x, Matrix<float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                const LayerContext& context);
  // The forward's x is scratch: nothing reads it after the forward (a first layer whose input lives in the
  // model's workspace), so a GCN layer may leave its rows scaled (DistributedAdjacency::forward_overwriting).
  void set_input_is_scratch(bool scratch) { input_is_scratch_ = scratch; }
  // --precision bf16 (ModelConfig::bf16): every product with the adjacency rounds its input's owned rows to
  // BF16 into `staging` ((n_own + n_halo) rows, stride bf16_stride of at least exchange_width(); shared by
  // the layers of a model) and multiplies with DistributedAdjacency::forward_bf16 (the adjacency must carry
  // BF16 messages); a layer's x then needs no halo rows. Recomputation is off. Before allocate().
  void set_bf16_staging(Matrix<Bf16> staging) {
    bf16_staging_ = staging;
    bf16_ = true;
    if (gat_) gat_->set_bf16_staging(staging);
  }
  bool bf16() const { return bf16_; }
  // Under bf16, a GCN layer that aggregates first from a scratch dense input (a first layer whose X_0 lives in
  // the model's workspace) can take its input already staged: the caller writes the owned rows of
  // DistributedAdjacency::staged_input_rows(staging, in()) before each forward, and the forward does not read x.
  // After set_input_is_scratch; the model decides (Model::stage_input_).
  bool can_take_staged_input() const {
    return bf16_ && kind_ == ConvKind::gcn && !transform_first() && input_is_scratch_ && !sparse_input_;
  }
  void set_input_staged(bool staged) {
    HALOGEN_ASSERT(!staged || can_take_staged_input(), "layer %d cannot take a staged input", layer_);
    input_staged_ = staged;
  }

  // Optional (first layer of a transform-first model on sparse features): the owned rows of the layer input as
  // CSR `x` (n, in) and its transpose `x_t` (in, n), holding exactly the values of x's owned rows at each
  // call. The products with W then use spmm instead of gemm. Only valid when transform_first() and the input
  // gradient is never requested. The views must stay valid for the layer's lifetime.
  void set_sparse_input(const kernels::CsrView& x, const kernels::CsrView& x_t);
  // gat: the layer's GatConv (its sparse input is set there); nullptr for the other kinds.
  GatConv* gat_conv() { return gat_.get(); }

  // W is applied before the adjacency (its product's width is W's column count); always for appnp (no
  // adjacency).
  // (gat: false; its X W is a dense gemm and it is never given a sparse input.)
  bool transform_first() const { return transform_first(kind_, in_, out_, gin_hidden_); }
  // The same for a layer of this shape (memory plans decide it before any layer exists).
  static bool transform_first(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden = 0) {
    return kind == ConvKind::appnp || (kind != ConvKind::gat && (kind == ConvKind::gin ? gin_hidden : out) < in);
  }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  Span<const float> bias() const;
  Span<float> bias_gradient();  // the bias's slot in the store's gradients
  int layer() const { return layer_; }

 private:
  void sparse_product(const kernels::CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
                      const LayerContext& context);
  void timed_gemm(Matrix<const float> a, bool ta, Matrix<const float> b, bool tb, Matrix<float> c, float beta,
                  const LayerContext& context);
  // x_own W into `out` (n, W's columns): spmm on a sparse input, else gemm.
  void input_times_weight(Matrix<const float> x_own, Matrix<float> out, const LayerContext& context);
  // grad W += x_own^T g (spmm with the transposed sparse input, else gemm).
  void weight_gradient(Matrix<const float> x_own, Matrix<const float> g, const LayerContext& context);
  // GIN's self term: out += (1 + eps) x (eps learned or 0).
  void gin_self_term(Matrix<const float> x, Matrix<float> out, const LayerContext& context);
  // The same from the BF16 input, widened block by block.
  void gin_self_term_bf16_input(Matrix<float> out, const LayerContext& context);
  void forward_gin(Matrix<float> x, Matrix<float> z_own, const LayerContext& context);
  void backward_gin(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                    const LayerContext& context);
  // Â X (gin: S X + (1 + eps) X) of an aggregate-first layer for its backward: the kept one, or recomputed
  // into the input gradient's slot.
  Matrix<const float> aggregate_for_backward(Matrix<const float> x, const LayerContext& context);
  // grad W += (Â X)^T g for an aggregate-first layer: from aggregate_for_backward, or (keeps_bf16_aggregate)
  // from the kept BF16 Â X, widened kWidenRows rows at a time into the gradient's slot.
  void aggregate_weight_gradient(Matrix<const float> x, Matrix<const float> g, const LayerContext& context);
  // keeps_bf16_aggregate: the forward's FP32 Â X rounded into the kept BF16 copy (unless the forward keeps
  // nothing: LayerContext::keep_for_backward).
  void keep_aggregate_bf16(Matrix<const float> ax, const LayerContext& context);
  // widen_input, timed as elementwise work.
  Matrix<const float> widened_input(int64_t first, int64_t rows, const LayerContext& context);
  // out (n, W's columns) "=" (beta 0) or "+=" (beta 1) x_own `weight`: gemm, or block by block from the BF16
  // input (then out's rows may be a view of any stride).
  void input_product(Matrix<const float> x_own, int weight, Matrix<float> out, float beta, const LayerContext& context);
  // grad(weight) += x_own^T g: gemm, or a k-split over the BF16 input's widened blocks.
  void input_gradient_product(Matrix<const float> x_own, Matrix<const float> g, int weight,
                              const LayerContext& context);
  // set_bf16_output: Z = ax W (+ x W_self) (appnp: x W, ax not read; gin: ax is h, Z = h W_out) block by block,
  // each handed to context.output_block.
  void output_blocks(Matrix<const float> ax, Matrix<const float> x_own, const LayerContext& context);
  // out "=" S x (S the adjacency; x's owned rows are the input, its halo rows are overwritten, or not read
  // under bf16, where x may have only its owned rows), extra() while the exchange is in flight. `scratch`: x
  // is read by nothing afterwards (forward_overwriting).
  void adjacency_forward(Matrix<float> x, Matrix<float> out, bool scratch, OverlapWork extra = {});
  // Columns of W (gin: the MLP's hidden width, else out).
  int64_t first_width() const { return kind_ == ConvKind::gin ? gin_hidden_ : out_; }

  ConvKind kind_;
  int layer_;
  int64_t in_, out_;
  ParameterStore& store_;
  int weight_ = -1, weight_self_ = -1, bias_ = -1;
  int64_t gin_hidden_ = 0;
  int inner_bias_ = -1, weight_out_ = -1, eps_ = -1;  // gin (eps_ only when learned)
  DistributedAdjacency* adjacency_ = nullptr;
  bool sparse_input_ = false;
  bool recompute_ = false;
  bool input_is_scratch_ = false;
  bool input_staged_ = false;  // set_input_staged
  bool bf16_aggregate_ = false;  // set_bf16_aggregate
  Buffer<Bf16> kept_bf16_;       // keeps_bf16_aggregate: Â X (n, width) in BF16
  Matrix<Bf16> ax_bf16_;
  Matrix<Bf16> bf16_staging_;  // bf16 only (set_bf16_staging)
  Matrix<const Bf16> x_bf16_;    // set_bf16_input: the input's owned rows (n, in)
  bool bf16_input_set_ = false;  // (x_bf16_ may have 0 rows on a rank without vertices)
  bool bf16_output_ = false;     // set_bf16_output
  Span<float> blocks_;           // set_bf16_blocks: block_floats() floats
  bool bf16_ = false;
  kernels::CsrView sparse_x_, sparse_x_t_;
  int64_t num_owned_ = 0, num_halo_ = 0;
  std::string forward_range_, backward_range_;  // "layer <l> forward" / "... backward" (profiler ranges)
  // Scratch (scratch_plan), allocated once. transform-first: t (n+h, out), grad_t (n, out); aggregate-first:
  // ax (n, in), grad_ax (n, in) (gin: width hidden for t). (The partial sums of the reverse exchange are the
  // adjacency's.) gin also keeps h = relu(aggregate W + b_inner) (n, hidden) and uses its gradient (n, hidden).
  // appnp: none. The views point into owned_kept_, and into the workspace or (without one) owned_transient_.
  Matrix<float> t_or_ax_, grad_t_or_ax_, gin_h_, grad_gin_h_;
  Tensor owned_kept_, owned_transient_;
  std::unique_ptr<GatConv> gat_;  // gat only
};

}  // namespace halogen::nn
