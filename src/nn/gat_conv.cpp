#include "nn/gat_conv.h"

#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"
#include "nn/graph_conv.h"

namespace halogen::nn {
namespace {

// Columns [begin, end) of m as a strided view.
template <typename T>
Matrix<T> columns(Matrix<T> m, int64_t begin, int64_t end) {
  return Matrix<T>{m.data + begin, m.rows, end - begin, m.stride, m.device};
}

}  // namespace

GatConv::GatConv(int layer, int64_t in, int64_t heads, int64_t head_width, bool concat, ParameterStore& store,
                 bool per_head_dropout)
    : heads_(heads),
      head_width_(head_width),
      concat_(concat),
      layer_(layer),
      in_(in),
      store_(store),
      per_head_dropout_(per_head_dropout) {
  HALOGEN_ASSERT(heads >= 1 && head_width >= 1, "GAT layer %d: %lld heads of width %lld", layer, (long long)heads,
                 (long long)head_width);
  const std::string prefix = "layer" + std::to_string(layer) + ".";
  weight_ = store.add(prefix + "weight", layer, in, heads * head_width, false);
  att_src_ = store.add(prefix + "att_src", layer, heads, head_width, false);
  att_dst_ = store.add(prefix + "att_dst", layer, heads, head_width, false);
  bias_ = store.add(prefix + "bias", layer, 1, out(), true);
  forward_range_ = "layer " + std::to_string(layer) + " forward";
  backward_range_ = "layer " + std::to_string(layer) + " backward";
}

int64_t GatConv::scratch_bytes(int64_t heads, int64_t head_width, bool concat, int64_t n, int64_t h,
                               int64_t edges, int64_t in, bool per_head_dropout, bool sparse_input) {
  const int64_t c = heads * head_width, row = c + heads;
  (void)edges;  // the fused attention keeps no per-edge tensor (its graph's edge arrays are AttentionGraph's)
  const int64_t floats = 2 * (n + h) * row + 5 * n * heads + (concat ? 0 : n * c) +
                         (per_head_dropout ? n * (c + (sparse_input ? 0 : in)) : 0);
  return floats * static_cast<int64_t>(sizeof(float));
}

void GatConv::allocate(DistributedAdjacency& adjacency, const AttentionGraph& graph) {
  adjacency_ = &adjacency;
  graph_ = &graph;
  num_owned_ = adjacency.num_owned();
  num_halo_ = adjacency.num_halo();
  HALOGEN_ASSERT(graph.num_owned() == num_owned_ && graph.num_halo() == num_halo_);
  const int64_t n = num_owned_, rows = n + num_halo_, c = heads_ * head_width_;
  HALOGEN_ASSERT(exchange_width(heads_, head_width_) <= adjacency.max_width(),
                 "GAT layer %d exchanges width %lld, the adjacency takes <= %lld", layer_,
                 (long long)exchange_width(heads_, head_width_), (long long)adjacency.max_width());
  const Device device = adjacency.device();
  hs_ = Tensor(rows, c + heads_, device);
  hs_.zero();
  row_state_ = Tensor(n, 4 * heads_, device);
  if (!concat_) heads_out_ = Tensor(n, c, device);
  grad_hs_ = Tensor(rows, c + heads_, device);
  grad_hs_.zero();
  grad_s_dst_ = Tensor(n, heads_, device);
  if (per_head_dropout_) {
    h_ = Tensor(n, c, device);
    if (!expect_sparse_) x_head_ = Tensor(n, in_, device);
  }
}

void GatConv::set_sparse_input(const SparseInput& input) {
  HALOGEN_ASSERT(expect_sparse_ && per_head_dropout_, "GAT layer %d: a sparse input needs expect_sparse_input() "
                 "before allocate() and per-head dropout", layer_);
  HALOGEN_ASSERT(input.x.rows == num_owned_ && input.x.cols == in_ && input.x_t.rows == in_ &&
                 input.x_t.cols == num_owned_ && input.values.rows == input.x.nnz &&
                 input.dropped.rows == input.x.nnz && input.t_values.rows == input.x.nnz);
  sparse_ = true;
  sparse_input_ = input;
}

kernels::EpilogueParams GatConv::feature_params(int stream_tag) const {
  return kernels::EpilogueParams{
      false, feature_dropout_, feature_seed_,
      rng::stream_id(rng::kGatFeatureDropout, feature_epoch_, static_cast<uint32_t>(layer_),
                     static_cast<uint32_t>(stream_tag))};
}

void GatConv::forward(Matrix<const float> x, Matrix<float> z, const LayerContext& context) {
  TraceRange range(forward_range_.c_str());
  HALOGEN_ASSERT(graph_ != nullptr, "allocate() first");
  const int64_t n = num_owned_, c = heads_ * head_width_;
  HALOGEN_ASSERT(x.rows >= n && x.cols == in_ && z.rows >= n && z.cols == out());  // only x's owned rows are read
  const kernels::Stream stream = context.stream;
  PhaseClock& clock = *context.clock;
  attention_ = context.attention;
  feature_dropout_ = per_head_dropout_ ? context.gat_feature_dropout : 0.0f;
  feature_seed_ = context.seed;
  feature_epoch_ = context.epoch;
  const bool drop = feature_dropout_ > 0.0f;
  Matrix<float> hs = hs_.matrix();
  Matrix<float> h_all = columns(hs, 0, c), s_src = columns(hs, c, c + heads_);
  // H before its dropout: the scores' input (the messages are H~, written into hs below).
  Matrix<float> h_own = drop ? h_.matrix() : h_all.slice_rows(0, n);
  Matrix<float> z_own = z.slice_rows(0, n);
  const Span<const int64_t> gid = graph_->row_gid();
  if (n > 0) {
    PhaseScope timer(clock, Phase::gemm, stream);
    const SparseInput& sparse = sparse_input_;
    if (sparse_ && !drop) {
      kernels::spmm(sparse.x, store_.param(weight_), h_own, false, stream);
    } else if (sparse_) {
      Matrix<float> w = store_.param(weight_);
      for (int64_t k = 0; k < heads_; ++k) {  // head k's mask on the nonzeros, then its columns of H
        kernels::dropout(sparse.values, sparse.keys, feature_params(1 + static_cast<int>(k)), sparse.dropped,
                         Matrix<float>{}, stream);
        kernels::spmm(sparse.x, columns(w, k * head_width_, (k + 1) * head_width_),
                      columns(h_own, k * head_width_, (k + 1) * head_width_), false, stream);
      }
    } else if (!drop) {
      kernels::gemm(x.slice_rows(0, n), false, store_.param(weight_), false, h_own, 1.0f, 0.0f, stream);
    } else {
      Matrix<float> w = store_.param(weight_);
      for (int64_t k = 0; k < heads_; ++k) {  // head k's input mask, then its columns of H
        kernels::dropout(x.slice_rows(0, n), gid, feature_params(1 + static_cast<int>(k)), x_head_.matrix(),
                         Matrix<float>{}, stream);
        kernels::gemm(x_head_.matrix(), false, columns(w, k * head_width_, (k + 1) * head_width_), false,
                      columns(h_own, k * head_width_, (k + 1) * head_width_), 1.0f, 0.0f, stream);
      }
    }
  }
  if (n > 0) {
    PhaseScope timer(clock, Phase::elementwise, stream);
    kernels::head_scores(h_own, store_.param(att_src_), s_src.slice_rows(0, n), stream);
    if (drop) kernels::dropout(h_own, gid, feature_params(0), h_all.slice_rows(0, n), Matrix<float>{}, stream);
  }
  auto destination_scores = [&] {
    if (n == 0) return;
    PhaseScope timer(clock, Phase::elementwise, stream);
    kernels::head_scores(h_own, store_.param(att_dst_), s_dst(), stream);
  };
  if (bf16_) adjacency_->gather_halo_rounding(hs, bf16_staging_, destination_scores);
  else adjacency_->gather_halo(hs, destination_scores);
  if (n == 0) return;
  Matrix<float> out = concat_ ? z_own : heads_out_.matrix();
  {  // scores, softmax, attention dropout and aggregation in one pass per destination row
    PhaseScope timer(clock, Phase::spmm, stream);
    kernels::gat_attention(graph_->a(), graph_->row_gid(), graph_->col_gid(), attention_, s_dst(), s_src,
                           kNegativeSlope, h_all, out, stats(), stream);
  }
  if (!concat_) {
    PhaseScope timer(clock, Phase::elementwise, stream);
    const float scale = 1.0f / static_cast<float>(heads_);
    for (int64_t k = 0; k < heads_; ++k)
      kernels::scale_add(scale, columns<float>(out, k * head_width_, (k + 1) * head_width_), k == 0 ? 0.0f : 1.0f,
                         z_own, stream);
  }
}

void GatConv::backward(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                       const LayerContext& context) {
  TraceRange range(backward_range_.c_str());
  const int64_t n = num_owned_, c = heads_ * head_width_;
  HALOGEN_ASSERT(grad_z.rows == n && grad_z.cols == out());
  HALOGEN_ASSERT(!want_grad_x || (grad_x.rows == n && grad_x.cols == in_));
  const kernels::Stream stream = context.stream;
  PhaseClock& clock = *context.clock;
  const kernels::CsrView& a = graph_->a();
  Matrix<float> hs = hs_.matrix(), grad_hs = grad_hs_.matrix();
  Matrix<const float> h_all = columns<float>(hs, 0, c), s_src = columns<float>(hs, c, c + heads_);
  Matrix<float> grad_h_all = columns(grad_hs, 0, c), grad_s_src = columns(grad_hs, c, c + heads_);
  const bool drop = feature_dropout_ > 0.0f;
  const Span<const int64_t> gid = graph_->row_gid();
  Matrix<const float> g = grad_z;  // dLoss/d(per-head output) (n, C)
  if (n > 0) {
    PhaseScope timer(clock, Phase::elementwise, stream);
    Matrix<float> grad_bias = store_.grad(bias_);
    kernels::bias_backward(grad_z, Span<float>{grad_bias.data, grad_bias.cols, grad_bias.device}, stream);
    if (!concat_) {
      Matrix<float> grad_heads = heads_out_.matrix();
      const float scale = 1.0f / static_cast<float>(heads_);
      for (int64_t k = 0; k < heads_; ++k)
        kernels::scale_add(scale, grad_z, 0.0f, columns(grad_heads, k * head_width_, (k + 1) * head_width_),
                           stream);
      g = grad_heads;
    }
  }
  if (n > 0) {
    // dLoss/dH (source side, every row incl. halo), dLoss/ds_src and dLoss/ds_dst, with every edge's score,
    // softmax weight and mask recomputed from the forward's row statistics (no per-edge tensor).
    PhaseScope timer(clock, Phase::spmm, stream);
    kernels::gat_attention_backward(a, graph_->a_t(), graph_->row_gid(), graph_->col_gid(), attention_,
                                    s_dst(), s_src, kNegativeSlope, h_all, stats(), g,
                                    row_dot(), grad_h_all, grad_s_dst_.matrix(), grad_s_src, stream);
  } else {
    // No edges: this rank's halo rows (if any) get zero sums (the exchange still pairs up with the owners').
    PhaseScope timer(clock, Phase::elementwise, stream);
    kernels::fill(Span<float>{grad_hs.data, grad_hs.rows * grad_hs.cols, grad_hs.device}, 0.0f, stream);
  }
  Matrix<float> grad_h_own = grad_h_all.slice_rows(0, n);
  // The scores' input: H (with feature dropout the messages were H~, and grad_h_own sums dLoss/dH~ until the
  // dropout's backward below, so the a_dst term waits for the exchange instead of running during it).
  Matrix<const float> h_own = drop ? Matrix<const float>(h_.matrix()) : h_all.slice_rows(0, n);
  auto destination_term = [&] {  // dLoss/dH += ds_dst a_dst, d a_dst += ...: owned rows only
    if (n == 0) return;
    PhaseScope timer(clock, Phase::elementwise, stream);
    Matrix<float> grad_att_dst = store_.grad(att_dst_);
    kernels::head_scores_backward(h_own, store_.param(att_dst_), grad_s_dst_.matrix(), grad_h_own, grad_att_dst,
                                  stream);
  };
  adjacency_->scatter_halo(grad_hs.slice_rows(n, n + num_halo_), grad_hs.slice_rows(0, n), [&] {
    if (!drop) destination_term();
  });
  if (n == 0) {
    if (want_grad_x && grad_x.size() > 0)
      kernels::fill(Span<float>{grad_x.data, grad_x.rows * grad_x.cols, grad_x.device}, 0.0f, stream);
    return;
  }
  if (drop) {  // dLoss/dH = the message dropout's backward (its mask, drawn again) + the score terms
    {
      PhaseScope timer(clock, Phase::elementwise, stream);
      kernels::dropout(grad_h_own, gid, feature_params(0), grad_h_own, Matrix<float>{}, stream);
    }
    destination_term();
  }
  {
    PhaseScope timer(clock, Phase::elementwise, stream);
    Matrix<float> grad_att_src = store_.grad(att_src_);
    kernels::head_scores_backward(h_own, store_.param(att_src_), grad_s_src.slice_rows(0, n), grad_h_own,
                                  grad_att_src, stream);
  }
  PhaseScope timer(clock, Phase::gemm, stream);
  if (sparse_) {  // dW[:, head k] += X~_k^T dH[:, head k] on the nonzeros; a sparse input has no gradient
    HALOGEN_ASSERT(!want_grad_x, "a sparse input has no gradient");
    const SparseInput& sparse = sparse_input_;
    if (!drop) {  // x_t's values: the model's (its input dropout with p = 0)
      kernels::spmm(sparse.x_t, grad_h_own, store_.grad(weight_), true, stream);
      return;
    }
    Matrix<float> grad_w = store_.grad(weight_);
    for (int64_t k = 0; k < heads_; ++k) {
      const int64_t begin = k * head_width_, end = (k + 1) * head_width_;
      kernels::dropout(sparse.values, sparse.keys, feature_params(1 + static_cast<int>(k)), sparse.dropped,
                       Matrix<float>{}, stream);
      kernels::gather_rows(sparse.dropped, sparse.t_order, sparse.t_values, stream);
      kernels::spmm(sparse.x_t, columns(grad_h_own, begin, end), columns(grad_w, begin, end), true, stream);
    }
    return;
  }
  if (!drop) {
    kernels::gemm(x.slice_rows(0, n), true, grad_h_own, false, store_.grad(weight_), 1.0f, 1.0f, stream);
    if (want_grad_x) kernels::gemm(grad_h_own, false, store_.param(weight_), true, grad_x, 1.0f, 0.0f, stream);
    return;
  }
  // Per head k: dW[:, head k] += dropout_k(X)^T dH[:, head k];  dX += dropout_k backward (dH[:, head k] W_k^T).
  Matrix<float> w = store_.param(weight_), grad_w = store_.grad(weight_), x_head = x_head_.matrix();
  for (int64_t k = 0; k < heads_; ++k) {
    const int64_t begin = k * head_width_, end = (k + 1) * head_width_;
    const kernels::EpilogueParams input_mask = feature_params(1 + static_cast<int>(k));
    kernels::dropout(x.slice_rows(0, n), gid, input_mask, x_head, Matrix<float>{}, stream);
    kernels::gemm(x_head, true, columns(grad_h_own, begin, end), false, columns(grad_w, begin, end), 1.0f, 1.0f,
                  stream);
    if (!want_grad_x) continue;
    Matrix<float> target = k == 0 ? grad_x : x_head;
    kernels::gemm(columns(grad_h_own, begin, end), false, columns(w, begin, end), true, target, 1.0f, 0.0f,
                  stream);
    kernels::dropout(target, gid, input_mask, target, Matrix<float>{}, stream);
    if (k > 0) kernels::scale_add(1.0f, x_head, 1.0f, grad_x, stream);
  }
}

}  // namespace halogen::nn
