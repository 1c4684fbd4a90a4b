#include "nn/graph_conv.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

const char* conv_kind_name(ConvKind kind) {
  switch (kind) {
    case ConvKind::gcn:
      return "gcn";
    case ConvKind::sage:
      return "sage";
    case ConvKind::gin:
      return "gin";
    case ConvKind::appnp:
      return "appnp";
    case ConvKind::gat:
      return "gat";
  }
  return "?";
}

ConvKind parse_conv_kind(const std::string& name, const char* option) {
  for (ConvKind kind : {ConvKind::gcn, ConvKind::sage, ConvKind::gin, ConvKind::appnp, ConvKind::gat})
    if (name == conv_kind_name(kind)) return kind;
  throw UserError(std::string(option) + ": unknown model \"" + name + "\" (gcn, sage, gin, appnp or gat)");
}

GraphConv::GraphConv(ConvKind kind, int layer, int64_t in, int64_t out, ParameterStore& store,
                     int64_t gin_hidden, bool gin_learn_eps, int64_t gat_heads, bool gat_concat,
                     bool gat_per_head_dropout)
    : kind_(kind), layer_(layer), in_(in), out_(out), store_(store), gin_hidden_(gin_hidden) {
  HALOGEN_ASSERT(kind != ConvKind::gin || gin_hidden >= 1, "GIN needs an MLP width >= 1");
  if (kind == ConvKind::gat) {
    HALOGEN_ASSERT(gat_heads >= 1 && (!gat_concat || out % gat_heads == 0), "GAT layer %d: %lld heads, width %lld",
                   layer, (long long)gat_heads, (long long)out);
    gat_ = std::make_unique<GatConv>(layer, in, gat_heads, gat_concat ? out / gat_heads : out, gat_concat, store,
                                     gat_per_head_dropout);
    bias_ = gat_->bias_index();
    return;
  }
  const std::string prefix = "layer" + std::to_string(layer) + ".";
  weight_ = store.add(prefix + "weight", layer, in, first_width(), false);
  if (kind == ConvKind::sage) weight_self_ = store.add(prefix + "weight_self", layer, in, out, false);
  if (kind == ConvKind::gin) {
    inner_bias_ = store.add(prefix + "inner_bias", layer, 1, gin_hidden, true);
    weight_out_ = store.add(prefix + "weight_out", layer, gin_hidden, out, false);
    if (gin_learn_eps) eps_ = store.add(prefix + "eps", layer, 1, 1, true);  // a "bias": initialised to 0
  }
  bias_ = store.add(prefix + "bias", layer, 1, out, true);
  forward_range_ = "layer " + std::to_string(layer) + " forward";
  backward_range_ = "layer " + std::to_string(layer) + " backward";
}

int64_t GraphConv::exchange_width(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden) {
  if (kind == ConvKind::appnp) return 0;
  const int64_t first = kind == ConvKind::gin ? gin_hidden : out;
  return first < in ? first : in;
}

int64_t GraphConv::parameter_count(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden,
                                   bool gin_learn_eps) {
  switch (kind) {
    case ConvKind::sage:
      return 2 * in * out + out;
    case ConvKind::gin:
      return in * gin_hidden + gin_hidden + gin_hidden * out + out + (gin_learn_eps ? 1 : 0);
    default:
      return in * out + out;
  }
}

GraphConv::ScratchPlan GraphConv::scratch_plan(ConvKind kind, int64_t in, int64_t out, int64_t num_owned,
                                               int64_t num_halo, int64_t gin_hidden, bool gin_learn_eps,
                                               bool recompute, bool bf16_aggregate) {
  ScratchPlan plan;
  if (kind == ConvKind::appnp || kind == ConvKind::gat) return plan;
  const int64_t n = num_owned, h = num_halo, width = exchange_width(kind, in, out, gin_hidden);
  const bool gin = kind == ConvKind::gin;
  if (transform_first(kind, in, out, gin_hidden)) {  // t (n + h, width); GIN's eps gradient reads it
    (gin && gin_learn_eps ? plan.kept : plan.forward) += (n + h) * width;
  } else if (bf16_aggregate) {  // the FP32 ax for the forward's product, and a BF16 copy for the backward
    plan.forward += n * width;
    plan.kept_bf16 += n * width;
  } else {
    (recompute ? plan.forward : plan.kept) += n * width;  // ax, read by the weight gradient (or recomputed)
  }
  plan.backward += n * width;  // grad_t or grad_ax
  if (gin) {
    plan.kept += n * gin_hidden;      // h
    plan.backward += n * gin_hidden;  // grad_h, beside grad_t or grad_ax
  }
  return plan;
}

bool GraphConv::backward_reads_input(ConvKind kind, int64_t in, int64_t out, int64_t gin_hidden,
                                     bool gin_learn_eps) {
  if (kind != ConvKind::gcn && kind != ConvKind::gin) return true;  // sage: X W_self; appnp, gat: X W
  if (transform_first(kind, in, out, gin_hidden)) return true;         // grad W = X^T grad_t
  return kind == ConvKind::gin && gin_learn_eps;                       // d eps = <X, grad_ax>
}

void GraphConv::allocate(DistributedAdjacency& adjacency, const AttentionGraph* attention, Span<float> workspace) {
  adjacency_ = &adjacency;
  num_owned_ = adjacency.num_owned();
  num_halo_ = adjacency.num_halo();
  if (gat_) {
    HALOGEN_ASSERT(attention != nullptr, "a GAT layer needs its attention graph");
    gat_->allocate(adjacency, *attention);
    return;
  }
  if (kind_ == ConvKind::appnp) return;  // a dense layer: no scratch
  const int64_t n = num_owned_, h = num_halo_, width = exchange_width(kind_, in_, out_, gin_hidden_);
  HALOGEN_ASSERT(width <= adjacency.max_width(), "layer %d multiplies width %lld, the adjacency takes <= %lld",
                 layer_, (long long)width, (long long)adjacency.max_width());
  const Device device = adjacency.device();
  const bool keep_bf16 = keeps_bf16_aggregate();
  const ScratchPlan plan =
      scratch_plan(kind_, in_, out_, n, h, gin_hidden_, eps_ >= 0, recomputes_aggregate(), keep_bf16);
  owned_kept_ = Tensor(plan.kept, 1, device);
  owned_kept_.zero();
  if (keep_bf16) {
    kept_bf16_ = Buffer<Bf16>(plan.kept_bf16, device);
    kept_bf16_.zero();
    ax_bf16_ = Matrix<Bf16>{kept_bf16_.data(), n, width, width, device};
  }
  float* transient = workspace.data;
  if (workspace.size == 0) {
    owned_transient_ = Tensor(plan.transient(), 1, device);
    owned_transient_.zero();
    transient = owned_transient_.data();
  } else {
    HALOGEN_ASSERT(workspace.device == device && workspace.size >= plan.transient(),
                   "layer %d needs a workspace of %lld floats, got %lld", layer_, (long long)plan.transient(),
                   (long long)workspace.size);
  }
  // Consecutive views from a cursor: kept ones from owned_kept_, forward and backward ones from `transient`.
  auto take = [device](float*& cursor, int64_t rows, int64_t cols) {
    Matrix<float> m{cursor, rows, cols, cols, device};
    if (cursor != nullptr) cursor += rows * cols;
    return m;
  };
  float* kept = owned_kept_.data();
  float* forward = transient;
  float* backward = transient;
  if (!transform_first()) t_or_ax_ = take(recomputes_aggregate() || keep_bf16 ? forward : kept, n, width);
  else if (kind_ == ConvKind::gin && eps_ >= 0) t_or_ax_ = take(kept, n + h, width);
  else t_or_ax_ = take(forward, n + h, width);
  grad_t_or_ax_ = take(backward, n, width);
  if (kind_ == ConvKind::gin) {
    gin_h_ = take(kept, n, gin_hidden_);
    grad_gin_h_ = take(backward, n, gin_hidden_);
  }
}

void GraphConv::set_bf16_input(Matrix<const Bf16> x) {
  HALOGEN_ASSERT(bf16_ && can_take_bf16_input(kind_) && !sparse_input_ && !input_staged_,
                 "layer %d cannot take a BF16 input", layer_);
  HALOGEN_ASSERT(x.cols == in_ && x.stride == in_, "layer %d: a BF16 input of %lld x %lld (stride %lld)", layer_,
                 (long long)x.rows, (long long)x.cols, (long long)x.stride);
  x_bf16_ = x;
  bf16_input_set_ = true;
}

void GraphConv::set_bf16_output(bool bf16_output) {
  HALOGEN_ASSERT(!bf16_output || (bf16_ && can_give_bf16_output(kind_, in_, out_)),
                 "layer %d cannot give a BF16 output", layer_);
  bf16_output_ = bf16_output;
}

Matrix<const float> GraphConv::widen_input(int64_t first, int64_t rows, kernels::Stream stream) const {
  HALOGEN_ASSERT(bf16_input_set_ && blocks_.size >= rows * in_,
                 "layer %d: %lld floats of blocks for %lld rows of %lld (BF16 input: %d)", layer_,
                 (long long)blocks_.size, (long long)rows, (long long)in_, int(bf16_input_set_));
  Matrix<float> block{blocks_.data, rows, in_, in_, blocks_.device};
  kernels::convert_from_bf16(x_bf16_.slice_rows(first, first + rows), block, stream);
  return block;
}

Matrix<const float> GraphConv::widened_input(int64_t first, int64_t rows, const LayerContext& context) {
  PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
  return widen_input(first, rows, context.stream);
}

void GraphConv::input_product(Matrix<const float> x_own, int weight, Matrix<float> out, float beta,
                              const LayerContext& context) {
  if (!bf16_input_set_) {
    timed_gemm(x_own, false, store_.param(weight), false, out, beta, context);
    return;
  }
  for_each_block(num_owned_, [&](int64_t first, int64_t rows) {
    timed_gemm(widened_input(first, rows, context), false, store_.param(weight), false,
               out.slice_rows(first, first + rows), beta, context);
  });
}

void GraphConv::input_gradient_product(Matrix<const float> x_own, Matrix<const float> g, int weight,
                                       const LayerContext& context) {
  if (!bf16_input_set_) {
    timed_gemm(x_own, true, g, false, store_.grad(weight), 1.0f, context);
    return;
  }
  // A k-split of x^T g over the widened blocks, accumulated with beta 1 (aggregate_weight_gradient's).
  for_each_block(num_owned_, [&](int64_t first, int64_t rows) {
    timed_gemm(widened_input(first, rows, context), true, g.slice_rows(first, first + rows), false,
               store_.grad(weight), 1.0f, context);
  });
}

void GraphConv::output_blocks(Matrix<const float> ax, Matrix<const float> x_own, const LayerContext& context) {
  HALOGEN_ASSERT(static_cast<bool>(context.output_block), "layer %d has a BF16 output: give an output_block",
                 layer_);
  HALOGEN_ASSERT(!sparse_input_, "layer %d: a sparse input is not multiplied block by block", layer_);
  const int64_t n = num_owned_;
  const int64_t input_floats = bf16_input_set_ ? block_rows(n) * in_ : 0;
  HALOGEN_ASSERT(blocks_.size >= block_floats(in_, out_, n, bf16_input_set_, true), "layer %d: %lld floats of blocks",
                 layer_, (long long)blocks_.size);
  for_each_block(n, [&](int64_t first, int64_t rows) {
    Matrix<float> z{blocks_.data + input_floats, rows, out_, out_, blocks_.device};
    if (kind_ == ConvKind::appnp) {  // Z = X W
      Matrix<const float> x_block =
          bf16_input_set_ ? widened_input(first, rows, context) : x_own.slice_rows(first, first + rows);
      timed_gemm(x_block, false, store_.param(weight_), false, z, 0.0f, context);
    } else if (kind_ == ConvKind::gin) {  // Z = h W_out (ax is GIN's h)
      timed_gemm(ax.slice_rows(first, first + rows), false, store_.param(weight_out_), false, z, 0.0f, context);
    } else {
      timed_gemm(ax.slice_rows(first, first + rows), false, store_.param(weight_), false, z, 0.0f, context);
    }
    if (kind_ == ConvKind::sage) {
      Matrix<const float> x_block =
          bf16_input_set_ ? widened_input(first, rows, context) : x_own.slice_rows(first, first + rows);
      timed_gemm(x_block, false, store_.param(weight_self_), false, z, 1.0f, context);
    }
    context.output_block(first, z);
  });
}

void GraphConv::set_sparse_input(const kernels::CsrView& x, const kernels::CsrView& x_t) {
  HALOGEN_ASSERT(transform_first(), "a sparse input is used only by transform-first layers");
  HALOGEN_ASSERT(x.cols == in_ && x_t.rows == in_ && x.rows == x_t.cols);
  sparse_input_ = true;
  sparse_x_ = x;
  sparse_x_t_ = x_t;
}

Span<const float> GraphConv::bias() const {
  Matrix<float> b = store_.param(bias_);
  return Span<const float>{b.data, b.cols, b.device};
}

Span<float> GraphConv::bias_gradient() {
  Matrix<float> g = store_.grad(bias_);
  return Span<float>{g.data, g.cols, g.device};
}

void GraphConv::sparse_product(const kernels::CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
                               const LayerContext& context) {
  if (out.rows == 0 || out.cols == 0 || (accumulate && a.nnz == 0)) return;
  PhaseScope timer(*context.clock, Phase::spmm, context.stream);
  kernels::spmm(a, x, out, accumulate, context.stream);
}

void GraphConv::timed_gemm(Matrix<const float> a, bool ta, Matrix<const float> b, bool tb, Matrix<float> c,
                           float beta, const LayerContext& context) {
  if (c.rows == 0 || c.cols == 0) return;
  PhaseScope timer(*context.clock, Phase::gemm, context.stream);
  const int64_t inner = ta ? a.rows : a.cols;
  if (inner == 0) {  // a rank without owned vertices: the product is empty (BLAS wants k >= 1)
    HALOGEN_ASSERT(c.stride == c.cols);
    if (beta == 0.0f) kernels::fill(Span<float>{c.data, c.rows * c.cols, c.device}, 0.0f, context.stream);
    return;
  }
  kernels::gemm(a, ta, b, tb, c, 1.0f, beta, context.stream);
}

void GraphConv::input_times_weight(Matrix<const float> x_own, Matrix<float> out,
                                   const LayerContext& context) {
  if (sparse_input_)
    sparse_product(sparse_x_, store_.param(weight_), out, false, context);
  else
    input_product(x_own, weight_, out, 0.0f, context);
}

void GraphConv::weight_gradient(Matrix<const float> x_own, Matrix<const float> g,
                                const LayerContext& context) {
  if (sparse_input_)
    sparse_product(sparse_x_t_, g, store_.grad(weight_), true, context);
  else
    input_gradient_product(x_own, g, weight_, context);
}

void GraphConv::gin_self_term(Matrix<const float> x, Matrix<float> out, const LayerContext& context) {
  if (out.rows == 0 || out.cols == 0) return;
  PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
  if (eps_ < 0) {
    kernels::scale_add(1.0f, x, 1.0f, out, context.stream);  // eps = 0
    return;
  }
  Matrix<float> eps = store_.param(eps_);
  kernels::one_plus_eps_add(x, Span<const float>{eps.data, 1, eps.device}, out, context.stream);
}

void GraphConv::adjacency_forward(Matrix<float> x, Matrix<float> out, bool scratch, OverlapWork extra) {
  if (!bf16_) {
    if (scratch) adjacency_->forward_overwriting(x, out, extra);
    else adjacency_->forward(x, out, extra);
    return;
  }
  // The owned rows rounded to BF16 (timed on the adjacency's clock, the model's), then the BF16 product with the
  // halo rows the exchange brings into the staging buffer.
  adjacency_->forward_rounding(x.slice_rows(0, num_owned_), bf16_staging_, out, scratch, extra);
}

void GraphConv::forward(Matrix<float> x, Matrix<float> z, const LayerContext& context) {
  TraceRange range(forward_range_.c_str());
  HALOGEN_ASSERT(adjacency_ != nullptr, "allocate() first");
  // x's halo rows are read (exchanged into) only when the layer aggregates first (gat: never, it exchanges X W).
  HALOGEN_ASSERT((bf16_input_set_ ||
                  ((gat_ || transform_first() || bf16_ ? x.rows >= num_owned_ : x.rows == num_owned_ + num_halo_) &&
                   x.cols == in_)) &&
                     (bf16_output_ || (z.rows >= num_owned_ && z.cols == out_)),
                 "layer %d forward: x %lld x %lld, z %lld x %lld", layer_, (long long)x.rows, (long long)x.cols,
                 (long long)z.rows, (long long)z.cols);
  const int64_t n = num_owned_;
  // With a BF16 input (output) the FP32 x (z) is not used and may be empty.
  Matrix<const float> x_own = bf16_input_set_ ? Matrix<const float>{} : x.slice_rows(0, n);
  Matrix<float> z_own = bf16_output_ ? Matrix<float>{} : z.slice_rows(0, n);
  if (gat_) {
    gat_->forward(x, z, context);
    return;
  }
  Matrix<const float> weight = store_.param(weight_);
  if (kind_ == ConvKind::appnp) {
    if (bf16_output_) output_blocks(Matrix<const float>{}, x_own, context);
    else input_times_weight(x_own, z_own, context);
    return;
  }
  if (kind_ == ConvKind::gin) {
    forward_gin(x, z_own, context);
    return;
  }

  if (transform_first()) {
    Matrix<float> t = t_or_ax_;                       // (n + h, out)
    input_times_weight(x_own, t.slice_rows(0, n), context);
    // SAGE's self term needs no halo rows: it runs while the exchange of t is in flight.
    auto self_term = [&] {
      if (sparse_input_) sparse_product(sparse_x_, store_.param(weight_self_), z_own, true, context);
      else input_product(x_own, weight_self_, z_own, 1.0f, context);
    };
    // t is read by nothing after the product (its rows may be left scaled).
    if (kind_ == ConvKind::sage) adjacency_forward(t, z_own, true, self_term);
    else adjacency_forward(t, z_own, true);
  } else {
    Matrix<float> ax = t_or_ax_.slice_rows(0, n);     // (n, in)
    // SAGE's self term below reads x: only GCN's input may be left scaled, and only when it is scratch.
    if (input_staged_)  // the owned rows of x are in the staging buffer already (set_input_staged)
      adjacency_->forward_staged(bf16_staging_, in_, ax);
    else if (bf16_input_set_)
      adjacency_->forward_bf16_input(x_bf16_, bf16_staging_, ax);
    else
      adjacency_forward(x, ax, kind_ == ConvKind::gcn && input_is_scratch_);
    if (bf16_output_) {
      output_blocks(ax, x_own, context);
    } else {
      timed_gemm(ax, false, weight, false, z_own, 0.0f, context);
      if (kind_ == ConvKind::sage) input_product(x_own, weight_self_, z_own, 1.0f, context);
    }
    keep_aggregate_bf16(ax, context);
  }
}

void GraphConv::keep_aggregate_bf16(Matrix<const float> ax, const LayerContext& context) {
  if (!keeps_bf16_aggregate() || !context.keep_for_backward || num_owned_ == 0) return;
  PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
  kernels::convert_to_bf16(ax, ax_bf16_, context.stream);
}

void GraphConv::backward(Matrix<const float> x, Matrix<float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                         const LayerContext& context) {
  TraceRange range(backward_range_.c_str());
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(grad_z.rows == n && grad_z.cols == out_);
  HALOGEN_ASSERT(!want_grad_x || (grad_x.rows == n && grad_x.cols == in_));
  if (gat_) {
    gat_->backward(x, grad_z, grad_x, want_grad_x, context);
    return;
  }
  Matrix<const float> x_own = bf16_input_set_ ? Matrix<const float>{} : x.slice_rows(0, n);
  Matrix<const float> weight = store_.param(weight_);

  if (!context.bias_gradient_done && n > 0) {
    PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
    kernels::bias_backward(grad_z, bias_gradient(), context.stream);
  }
  HALOGEN_ASSERT(!(sparse_input_ && want_grad_x), "a sparse input has no gradient");
  if (kind_ == ConvKind::appnp) {
    weight_gradient(x_own, grad_z, context);
    if (want_grad_x) timed_gemm(grad_z, false, weight, true, grad_x, 0.0f, context);
    return;
  }
  if (kind_ == ConvKind::gin) {
    backward_gin(x, grad_z, grad_x, want_grad_x, context);
    return;
  }
  if (kind_ == ConvKind::sage) {
    if (sparse_input_) sparse_product(sparse_x_t_, grad_z, store_.grad(weight_self_), true, context);
    else input_gradient_product(x_own, grad_z, weight_self_, context);
  }

  if (transform_first()) {
    Matrix<float> grad_t = grad_t_or_ax_;  // (n, out)
    // GCN reads grad_z no more (its bias gradient is done): it may be left scaled. SAGE's self term reads it.
    if (kind_ == ConvKind::gcn) adjacency_->transpose_overwriting(grad_z, grad_t);
    else adjacency_->transpose(grad_z, grad_t);
    weight_gradient(x_own, grad_t, context);
    if (want_grad_x) {
      timed_gemm(grad_t, false, weight, true, grad_x, 0.0f, context);
      if (kind_ == ConvKind::sage) timed_gemm(grad_z, false, store_.param(weight_self_), true, grad_x, 1.0f, context);
    }
  } else {
    aggregate_weight_gradient(x, grad_z, context);
    if (want_grad_x) {
      Matrix<float> grad_ax = grad_t_or_ax_;  // (n, in)
      timed_gemm(grad_z, false, weight, true, grad_ax, 0.0f, context);
      adjacency_->transpose_overwriting(grad_ax, grad_x);  // grad_ax is scratch
      if (kind_ == ConvKind::sage) timed_gemm(grad_z, false, store_.param(weight_self_), true, grad_x, 1.0f, context);
    }
  }
}

void GraphConv::aggregate_weight_gradient(Matrix<const float> x, Matrix<const float> g,
                                          const LayerContext& context) {
  if (!keeps_bf16_aggregate()) {
    timed_gemm(aggregate_for_backward(x, context), true, g, false, store_.grad(weight_), 1.0f, context);
    return;
  }
  // grad W += sum over row blocks of float(ax_block)^T g_block: the block is widened (exactly) into the first
  // rows of the gradient's slot, which is free until the input gradient is written, after this.
  const int64_t n = num_owned_;
  for_each_block(n, [&](int64_t first, int64_t rows) {
    Matrix<float> block = grad_t_or_ax_.slice_rows(0, rows);
    {
      PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
      const Matrix<const Bf16> kept = ax_bf16_;
      kernels::convert_from_bf16(kept.slice_rows(first, first + rows), block, context.stream);
    }
    timed_gemm(block, true, g.slice_rows(first, first + rows), false, store_.grad(weight_), 1.0f, context);
  });
}

Matrix<const float> GraphConv::aggregate_for_backward(Matrix<const float> x, const LayerContext& context) {
  const int64_t n = num_owned_;
  if (!recomputes_aggregate()) return t_or_ax_.slice_rows(0, n);
  // The forward's products in the forward's order (own part, GIN's self term, halo part), so bitwise the same.
  HALOGEN_ASSERT(x.rows == n + num_halo_, "layer %d: recomputing Â X needs x's halo rows", layer_);
  Matrix<float> ax = grad_t_or_ax_;  // (n, in): free until the input gradient is written, after ax is read
  Matrix<const float> x_own = x.slice_rows(0, n);
  if (kind_ == ConvKind::gin)
    adjacency_->forward_local(x, ax, [&] { gin_self_term(x_own, ax, context); });
  else
    adjacency_->forward_local(x, ax);
  return ax;
}

void GraphConv::gin_self_term_bf16_input(Matrix<float> out, const LayerContext& context) {
  for_each_block(num_owned_, [&](int64_t first, int64_t rows) {
    gin_self_term(widened_input(first, rows, context), out.slice_rows(first, first + rows), context);
  });
}

void GraphConv::forward_gin(Matrix<float> x, Matrix<float> z_own, const LayerContext& context) {
  const int64_t n = num_owned_;
  Matrix<const float> x_own = bf16_input_set_ ? Matrix<const float>{} : x.slice_rows(0, n);
  Matrix<float> h = gin_h_;  // (n, hidden)
  if (transform_first()) {
    // h = S T + (1 + eps) T, T = X W (n + h, hidden): the self term runs while T's halo rows are in flight.
    Matrix<float> t = t_or_ax_;
    input_times_weight(x_own, t.slice_rows(0, n), context);
    Matrix<const float> t_own = t.slice_rows(0, n);
    adjacency_forward(t, h, false, [&] { gin_self_term(t_own, h, context); });
  } else {
    // ax = S X + (1 + eps) X (n, in), then h = ax W.
    Matrix<float> ax = t_or_ax_.slice_rows(0, n);
    if (bf16_input_set_)
      adjacency_->forward_bf16_input(x_bf16_, bf16_staging_, ax, [&] { gin_self_term_bf16_input(ax, context); });
    else
      adjacency_forward(x, ax, false, [&] { gin_self_term(x_own, ax, context); });
    timed_gemm(ax, false, store_.param(weight_), false, h, 0.0f, context);
    keep_aggregate_bf16(ax, context);
  }
  if (n > 0) {
    PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
    Matrix<float> inner_bias = store_.param(inner_bias_);
    kernels::add_bias(h, Span<const float>{inner_bias.data, inner_bias.cols, inner_bias.device},
                      context.stream);
    kernels::relu_forward(h, h, context.stream);
  }
  if (bf16_output_) output_blocks(h, x_own, context);
  else timed_gemm(h, false, store_.param(weight_out_), false, z_own, 0.0f, context);
}

void GraphConv::backward_gin(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x,
                             bool want_grad_x, const LayerContext& context) {
  const int64_t n = num_owned_;
  Matrix<const float> x_own = bf16_input_set_ ? Matrix<const float>{} : x.slice_rows(0, n);
  Matrix<const float> h = gin_h_;
  Matrix<float> grad_h = grad_gin_h_;  // (n, hidden)
  timed_gemm(h, true, grad_z, false, store_.grad(weight_out_), 1.0f, context);
  timed_gemm(grad_z, false, store_.param(weight_out_), true, grad_h, 0.0f, context);
  if (n > 0) {
    PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
    kernels::relu_backward(h, grad_h, context.stream);
    Matrix<float> grad_inner_bias = store_.grad(inner_bias_);
    kernels::bias_backward(grad_h,
                           Span<float>{grad_inner_bias.data, grad_inner_bias.cols, grad_inner_bias.device},
                           context.stream);
  }
  // d eps = <self-term input, its gradient>, summed over this rank's rows (the reducer sums the ranks).
  auto eps_gradient = [&](Matrix<const float> input, Matrix<const float> grad) {
    if (eps_ < 0 || n == 0) return;
    PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
    Matrix<float> grad_eps = store_.grad(eps_);
    kernels::dot_add(input, grad, Span<float>{grad_eps.data, 1, grad_eps.device}, context.stream);
  };
  Matrix<const float> grad_h_const = grad_h;
  if (transform_first()) {
    // grad_t = S^T grad_h + (1 + eps) grad_h; grad W += X^T grad_t; grad_x = grad_t W^T.
    Matrix<const float> t_own = t_or_ax_.slice_rows(0, n);
    eps_gradient(t_own, grad_h_const);
    Matrix<float> grad_t = grad_t_or_ax_;  // (n, hidden)
    adjacency_->transpose(grad_h_const, grad_t, [&] { gin_self_term(grad_h_const, grad_t, context); });
    weight_gradient(x_own, grad_t, context);
    if (want_grad_x) timed_gemm(grad_t, false, store_.param(weight_), true, grad_x, 0.0f, context);
  } else {
    // grad W += ax^T grad_h; grad_ax = grad_h W^T; grad_x = S^T grad_ax + (1 + eps) grad_ax.
    aggregate_weight_gradient(x, grad_h_const, context);
    if (!want_grad_x && eps_ < 0) return;
    Matrix<float> grad_ax = grad_t_or_ax_;  // (n, in)
    timed_gemm(grad_h_const, false, store_.param(weight_), true, grad_ax, 0.0f, context);
    Matrix<const float> grad_ax_const = grad_ax;
    if (!bf16_input_set_) {
      eps_gradient(x_own, grad_ax_const);
    } else {  // block by block from the widened input: dot_add accumulates
      for_each_block(n, [&](int64_t first, int64_t rows) {
        eps_gradient(widened_input(first, rows, context), grad_ax_const.slice_rows(first, first + rows));
      });
    }
    if (want_grad_x)
      adjacency_->transpose(grad_ax_const, grad_x, [&] { gin_self_term(grad_ax_const, grad_x, context); });
  }
}

}  // namespace halogen::nn
