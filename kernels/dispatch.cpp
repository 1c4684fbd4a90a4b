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


// ==== temporal cells ======================================================================================

void sigmoid_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  HALOGEN_DISPATCH(y.device, sigmoid_forward(x, y, stream));
}

void sigmoid_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream stream) {
  HALOGEN_DISPATCH(grad_x.device, sigmoid_backward(y, grad_y, grad_x, stream));
}

void tanh_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  HALOGEN_DISPATCH(y.device, tanh_forward(x, y, stream));
}

void tanh_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream stream) {
  HALOGEN_DISPATCH(grad_x.device, tanh_backward(y, grad_y, grad_x, stream));
}

void relu_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  HALOGEN_DISPATCH(y.device, relu_forward(x, y, stream));
}

void relu_backward(Matrix<const float> y, Matrix<float> grad, Stream stream) {
  HALOGEN_DISPATCH(grad.device, relu_backward(y, grad, stream));
}

void multiply(Matrix<const float> a, Matrix<const float> b, Matrix<float> out, Stream stream) {
  HALOGEN_DISPATCH(out.device, multiply(a, b, out, stream));
}

void scale_add(float alpha, Matrix<const float> x, float beta, Matrix<float> y, Stream stream) {
  HALOGEN_DISPATCH(y.device, scale_add(alpha, x, beta, y, stream));
}

void gru_gates(Matrix<const float> pre_z, Matrix<const float> pre_r, Matrix<const float> h_prev, Matrix<float> z,
               Matrix<float> r, Matrix<float> hr, Stream stream) {
  HALOGEN_DISPATCH(z.device, gru_gates(pre_z, pre_r, h_prev, z, r, hr, stream));
}

void gru_update(Matrix<const float> pre_h, Matrix<const float> z, Matrix<const float> h_prev, GruMix mix,
                Matrix<float> h_candidate, Matrix<float> h, Stream stream) {
  HALOGEN_DISPATCH(h.device, gru_update(pre_h, z, h_prev, mix, h_candidate, h, stream));
}

void gru_update_backward(Matrix<const float> grad_h, Matrix<const float> grad_carry, Matrix<const float> z,
                         Matrix<const float> h_prev, Matrix<const float> h_candidate, GruMix mix,
                         Matrix<float> grad_pre_z, Matrix<float> grad_pre_h, Matrix<float> grad_h_prev,
                         Stream stream) {
  HALOGEN_DISPATCH(grad_h_prev.device, gru_update_backward(grad_h, grad_carry, z, h_prev, h_candidate, mix,
                                                           grad_pre_z, grad_pre_h, grad_h_prev, stream));
}

void gru_gates_backward(Matrix<const float> grad_hr, Matrix<const float> r, Matrix<const float> h_prev,
                        Matrix<float> grad_pre_r, Matrix<float> grad_h_prev, Stream stream) {
  HALOGEN_DISPATCH(grad_pre_r.device, gru_gates_backward(grad_hr, r, h_prev, grad_pre_r, grad_h_prev, stream));
}

void lstm_cell(Matrix<const float> pre, Matrix<const float> c_prev, Matrix<float> gates, Matrix<float> c,
               Matrix<float> h, Stream stream) {
  HALOGEN_DISPATCH(c.device, lstm_cell(pre, c_prev, gates, c, h, stream));
}

void lstm_cell_backward(Matrix<const float> grad_h, Matrix<const float> grad_c, Matrix<const float> gates,
                        Matrix<const float> c_prev, Matrix<const float> c, Matrix<float> grad_pre,
                        Matrix<float> grad_c_prev, Stream stream) {
  HALOGEN_DISPATCH(grad_pre.device,
                   lstm_cell_backward(grad_h, grad_c, gates, c_prev, c, grad_pre, grad_c_prev, stream));
}

void pair_dot(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<float> scores,
              Stream stream) {
  HALOGEN_DISPATCH(x.device, pair_dot(x, a, b, scores, stream));
}

void pair_dot_backward(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b,
                       Span<const float> grad_scores, Matrix<float> grad_x, Stream stream) {
  HALOGEN_DISPATCH(grad_x.device, pair_dot_backward(x, a, b, grad_scores, grad_x, stream));
}

double bce_with_logits(Span<const float> scores, Span<const uint8_t> labels, float scale, Span<float> grad_scores,
                       Stream stream) {
  HALOGEN_DISPATCH(scores.device, bce_with_logits(scores, labels, scale, grad_scores, stream));
}

}  // namespace halogen::kernels
