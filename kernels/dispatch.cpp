// kernels::<op> -> kernels::cpu::<op> or kernels::cuda::<op>, chosen by the device of the op's first view.
// The chosen backend asserts that every other view lives on the same device. Without the CUDA backend,
// device views reach the CPU kernels, which reject them with an assertion naming the view.
#include "kernels/cpu/ops.h"
#include "kernels/ops.h"
#ifdef HALOGEN_HAVE_CUDA
#include "kernels/cuda/ops.h"
#define HALOGEN_DISPATCH(device, call)                                   \
  do {                                                                   \
    if ((device) == Device::cuda) return ::halogen::kernels::cuda::call; \
    return ::halogen::kernels::cpu::call;                                \
  } while (0)
#else
#define HALOGEN_DISPATCH(device, call) return ::halogen::kernels::cpu::call
#endif

namespace halogen::kernels {

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream stream) {
  HALOGEN_DISPATCH(a.device, spmm(a, x, out, accumulate, stream));
}

void release_sparse_cache() {
  cpu::release_sparse_cache();
#ifdef HALOGEN_HAVE_CUDA
  cuda::release_sparse_cache();
#endif
}

void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream stream) {
  HALOGEN_DISPATCH(c.device, gemm(a, transpose_a, b, transpose_b, c, alpha, beta, stream));
}

void add_bias(Matrix<float> out, Span<const float> bias, Stream stream) {
  HALOGEN_DISPATCH(out.device, add_bias(out, bias, stream));
}

void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream stream) {
  HALOGEN_DISPATCH(grad_out.device, bias_backward(grad_out, grad_bias, stream));
}

void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream stream) {
  HALOGEN_DISPATCH(h.device, bias_relu_dropout(h, bias, row_gid, params, mask, stream));
}

void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params,
             Matrix<float> out, Matrix<float> mask, Stream stream) {
  HALOGEN_DISPATCH(out.device, dropout(x, row_gid, params, out, mask, stream));
}

void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream stream) {
  HALOGEN_DISPATCH(grad.device, apply_mask(grad, mask, stream));
}

double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream stream) {
  HALOGEN_DISPATCH(logits.device, softmax_cross_entropy(logits, labels, rows, scale, grad_logits, stream));
}

int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream stream) {
  HALOGEN_DISPATCH(logits.device, count_correct(logits, labels, rows, stream));
}

void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v,
               const AdamParams& params, Stream stream) {
  HALOGEN_DISPATCH(param.device, adam_step(param, grad, m, v, params, stream));
}

void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream) {
  HALOGEN_DISPATCH(out.device, gather_rows(x, idx, out, stream));
}

void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream) {
  HALOGEN_DISPATCH(out.device, scatter_add_rows(x, idx, out, stream));
}

void fill(Span<float> x, float value, Stream stream) {
  HALOGEN_DISPATCH(x.device, fill(x, value, stream));
}

void axpy(float alpha, Span<const float> x, Span<float> y, Stream stream) {
  HALOGEN_DISPATCH(y.device, axpy(alpha, x, y, stream));
}

double sum_squares(Span<const float> x, Stream stream) {
  HALOGEN_DISPATCH(x.device, sum_squares(x, stream));
}

// ---- temporal tasks ---------------------------------------------------------------------------------------

double squared_error(Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y,
                     Stream stream) {
  HALOGEN_DISPATCH(y.device, squared_error(y, target, grad_scale, grad_y, stream));
}

}  // namespace halogen::kernels
