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
  return ((num_owned + num_halo) * width + num_owned * width) * static_cast<int64_t>(sizeof(float));
}

void GraphConv::allocate(DistributedAdjacency& adjacency) {
  adjacency_ = &adjacency;
  num_owned_ = adjacency.num_owned();
  num_halo_ = adjacency.num_halo();
  const int64_t width = transform_first() ? out_ : in_;
  HALOGEN_ASSERT(width <= adjacency.max_width(), "layer %d multiplies width %lld, the adjacency takes <= %lld",
                 layer_, (long long)width, (long long)adjacency.max_width());
  // t needs halo rows (they are received into it); ax does not, but one size keeps the estimate simple.
  t_or_ax_ = Tensor(num_owned_ + num_halo_, width, adjacency.device());
  grad_t_or_ax_ = Tensor(num_owned_, width, adjacency.device());
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
    // SAGE's self term needs no halo rows: it runs while the exchange of t is in flight.
    auto self_term = [&] {
      if (sparse_input_) sparse_product(sparse_x_, store_.param(weight_self_), z_own, true, context);
      else timed_gemm(x_own, false, store_.param(weight_self_), false, z_own, 1.0f, context);
    };
    if (kind_ == ConvKind::sage) adjacency_->forward(t, z_own, self_term);
    else adjacency_->forward(t, z_own);
  } else {
    Matrix<float> ax = t_or_ax_.matrix().slice_rows(0, n);     // (n, in)
    adjacency_->forward(x, ax);
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

  if (transform_first()) {
    Matrix<float> grad_t = grad_t_or_ax_.matrix();  // (n, out)
    adjacency_->transpose(grad_z, grad_t);
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
      adjacency_->transpose(grad_ax, grad_x);
      if (kind_ == ConvKind::sage) timed_gemm(grad_z, false, store_.param(weight_self_), true, grad_x, 1.0f, context);
    }
  }
}

}  // namespace halogen::nn
