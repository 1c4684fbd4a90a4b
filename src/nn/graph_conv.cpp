#include "nn/graph_conv.h"

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

GraphConv::GraphConv(ConvKind kind, int layer, int64_t in, int64_t out, ParameterStore& store)
    : kind_(kind), layer_(layer), in_(in), out_(out), store_(store) {
  const std::string prefix = "layer" + std::to_string(layer) + ".";
  weight_ = store.add(prefix + "weight", layer, in, out, false);
  if (kind == ConvKind::sage) weight_self_ = store.add(prefix + "weight_self", layer, in, out, false);
  bias_ = store.add(prefix + "bias", layer, 1, out, true);
  forward_range_ = "layer " + std::to_string(layer) + " forward";
  backward_range_ = "layer " + std::to_string(layer) + " backward";
}

int64_t GraphConv::scratch_bytes(int64_t in, int64_t out, int64_t num_owned, int64_t num_halo) {
  const int64_t width = out < in ? out : in;
  return ((num_owned + num_halo) * width + num_owned * width + num_halo * width) * static_cast<int64_t>(sizeof(float));
}

void GraphConv::allocate(const SparseAdjacency& adjacency, int64_t num_owned, int64_t num_halo, Device device) {
  adjacency_ = &adjacency;
  num_owned_ = num_owned;
  num_halo_ = num_halo;
  const int64_t width = transform_first() ? out_ : in_;
  // t needs halo rows (they are received into it); ax does not, but one size keeps the estimate simple.
  t_or_ax_ = Tensor(num_owned + num_halo, width, device);
  grad_t_or_ax_ = Tensor(num_owned, width, device);
  partial_ = Tensor(num_halo, width, device);
  t_or_ax_.zero();
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

void GraphConv::local_spmm(const DeviceCsr& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
                           const LayerContext& context) {
  if (out.rows == 0 || out.cols == 0) return;
  if (accumulate && a.nnz() == 0) return;  // nothing to add (also covers a rank without halo)
  PhaseScope timer(*context.clock, Phase::spmm, context.stream);
  kernels::spmm(a.view(), x, out, accumulate, context.stream);
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

namespace {
// A rank with nothing to send or receive has no exchange in flight: its halo time is zero, not the length of
// the local product that runs between start and finish.
bool moves_rows(const comm::HaloExchange& halo) { return halo.num_send() > 0 || halo.num_halo() > 0; }
}  // namespace

void GraphConv::start_forward_exchange(Matrix<float> x, const LayerContext& context) {
  if (moves_rows(*context.halo)) context.clock->begin(Phase::halo_total, context.stream);
  PhaseScope exposed(*context.clock, Phase::halo_exposed, context.stream);
  context.halo->start_forward(x, context.stream);
}

void GraphConv::finish_forward_exchange(const LayerContext& context) {
  {
    PhaseScope exposed(*context.clock, Phase::halo_exposed, context.stream);
    context.halo->finish_forward(context.stream);
  }
  if (moves_rows(*context.halo)) context.clock->end(Phase::halo_total, context.stream);
}

void GraphConv::start_reverse_exchange(Matrix<const float> partial, const LayerContext& context) {
  if (moves_rows(*context.halo)) context.clock->begin(Phase::halo_total, context.stream);
  PhaseScope exposed(*context.clock, Phase::halo_exposed, context.stream);
  context.halo->start_reverse(partial, context.stream);
}

void GraphConv::finish_reverse_exchange(Matrix<float> out, const LayerContext& context) {
  {
    PhaseScope exposed(*context.clock, Phase::halo_exposed, context.stream);
    context.halo->finish_reverse(out, context.stream);
  }
  if (moves_rows(*context.halo)) context.clock->end(Phase::halo_total, context.stream);
}

void GraphConv::forward(Matrix<float> x, Matrix<float> z, const LayerContext& context) {
  TraceRange range(forward_range_.c_str());
  HALOGEN_ASSERT(adjacency_ != nullptr, "allocate() first");
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.cols == in_ && z.rows >= num_owned_ && z.cols == out_);
  const int64_t n = num_owned_;
  Matrix<const float> x_own = x.slice_rows(0, n);
  Matrix<float> z_own = z.slice_rows(0, n);
  Matrix<const float> weight = store_.param(weight_);

  if (transform_first()) {
    Matrix<float> t = t_or_ax_.matrix();                       // (n + h, out)
    if (sparse_input_) sparse_product(sparse_x_, weight, t.slice_rows(0, n), false, context);
    else timed_gemm(x_own, false, weight, false, t.slice_rows(0, n), 0.0f, context);
    start_forward_exchange(t, context);
    if (!context.overlap) finish_forward_exchange(context);
    local_spmm(adjacency_->own, t.slice_rows(0, n), z_own, false, context);
    if (kind_ == ConvKind::sage) {
      if (sparse_input_) sparse_product(sparse_x_, store_.param(weight_self_), z_own, true, context);
      else timed_gemm(x_own, false, store_.param(weight_self_), false, z_own, 1.0f, context);
    }
    if (context.overlap) finish_forward_exchange(context);
    local_spmm(adjacency_->halo, t.slice_rows(n, n + num_halo_), z_own, true, context);
  } else {
    Matrix<float> ax = t_or_ax_.matrix().slice_rows(0, n);     // (n, in)
    start_forward_exchange(x, context);
    if (!context.overlap) finish_forward_exchange(context);
    local_spmm(adjacency_->own, x_own, ax, false, context);
    if (context.overlap) finish_forward_exchange(context);
    local_spmm(adjacency_->halo, x.slice_rows(n, n + num_halo_), ax, true, context);
    timed_gemm(ax, false, weight, false, z_own, 0.0f, context);
    if (kind_ == ConvKind::sage) timed_gemm(x_own, false, store_.param(weight_self_), false, z_own, 1.0f, context);
  }
}

void GraphConv::backward(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                         const LayerContext& context) {
  TraceRange range(backward_range_.c_str());
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(grad_z.rows == n && grad_z.cols == out_);
  HALOGEN_ASSERT(!want_grad_x || (grad_x.rows == n && grad_x.cols == in_));
  Matrix<const float> x_own = x.slice_rows(0, n);
  Matrix<const float> weight = store_.param(weight_);

  {
    PhaseScope timer(*context.clock, Phase::elementwise, context.stream);
    Matrix<float> grad_bias = store_.grad(bias_);
    if (n > 0) kernels::bias_backward(grad_z, Span<float>{grad_bias.data, grad_bias.cols, grad_bias.device}, context.stream);
  }
  HALOGEN_ASSERT(!(sparse_input_ && want_grad_x), "a sparse input has no gradient");
  if (kind_ == ConvKind::sage) {
    if (sparse_input_) sparse_product(sparse_x_t_, grad_z, store_.grad(weight_self_), true, context);
    else timed_gemm(x_own, true, grad_z, false, store_.grad(weight_self_), 1.0f, context);
  }

  // Â^T applied to a matrix g (n, w): the halo part goes back to the owners (reverse exchange) while the
  // owned part is computed here; the owners' contributions to our rows arrive and are scatter-added.
  auto transpose_aggregate = [&](Matrix<const float> g, Matrix<float> out) {
    Matrix<float> partial = partial_.matrix();  // (h, w)
    partial.cols = g.cols;
    partial.stride = g.cols;
    local_spmm(adjacency_->halo_t, g, partial, false, context);
    start_reverse_exchange(partial, context);
    if (context.overlap) {
      local_spmm(adjacency_->own_t, g, out, false, context);
      finish_reverse_exchange(out, context);
    } else {  // wait first: the received sums land in a zeroed `out`, then the local product adds to them
      HALOGEN_ASSERT(out.stride == out.cols);
      kernels::fill(Span<float>{out.data, out.rows * out.cols, out.device}, 0.0f, context.stream);
      finish_reverse_exchange(out, context);
      local_spmm(adjacency_->own_t, g, out, true, context);
    }
  };

  if (transform_first()) {
    Matrix<float> grad_t = grad_t_or_ax_.matrix();  // (n, out)
    transpose_aggregate(grad_z, grad_t);
    if (sparse_input_) sparse_product(sparse_x_t_, grad_t, store_.grad(weight_), true, context);
    else timed_gemm(x_own, true, grad_t, false, store_.grad(weight_), 1.0f, context);
    if (want_grad_x) {
      timed_gemm(grad_t, false, weight, true, grad_x, 0.0f, context);
      if (kind_ == ConvKind::sage) timed_gemm(grad_z, false, store_.param(weight_self_), true, grad_x, 1.0f, context);
    }
  } else {
    Matrix<const float> ax = t_or_ax_.matrix().slice_rows(0, n);
    timed_gemm(ax, true, grad_z, false, store_.grad(weight_), 1.0f, context);
    if (want_grad_x) {
      Matrix<float> grad_ax = grad_t_or_ax_.matrix();  // (n, in)
      timed_gemm(grad_z, false, weight, true, grad_ax, 0.0f, context);
      transpose_aggregate(grad_ax, grad_x);
      if (kind_ == ConvKind::sage) timed_gemm(grad_z, false, store_.param(weight_self_), true, grad_x, 1.0f, context);
    }
  }
}

}  // namespace halogen::nn
