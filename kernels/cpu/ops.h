#pragma once
// The CPU backend (OpenMP + OpenBLAS): halogen::kernels::cpu::<op> with exactly the signatures and contracts
// of kernels/ops.h, which documents them; kernels/dispatch.cpp routes kernels::<op> here for host views.
// These are also the reference that the CUDA kernels are tested against.
//
// CPU specifics:
// - Every view must have device == Device::cpu (HALOGEN_ASSERT otherwise).
// - Threads: each op uses omp_get_max_threads() threads (the trainer sets them with omp_set_num_threads).
//   gemm also sets OpenBLAS's thread count to omp_get_max_threads() before calling it.
// - Determinism: no op uses atomics on floats; every reduction (bias_backward, softmax_cross_entropy's sum,
//   sum_squares) sums fixed blocks of rows in a fixed order, so results are bitwise identical for any thread
//   count. spmm computes each output row wholly in one thread, in index order.
// - `stream` is ignored.
// - Extensions of the common contract (the CUDA backend should accept the same):
//   * bias_relu_dropout / dropout: `mask` may be empty (rows == 0) when nothing is to be recorded
//     (inference); `row_gid` may be empty when params.dropout == 0.
//   * dropout: `out` may be the same memory as `x` (in place).
//   * softmax_cross_entropy: `rows` must not repeat a row (each row's gradient is written once).
#include "kernels/ops.h"

namespace halogen::kernels::cpu {

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
          Stream stream = nullptr);
void release_sparse_cache();
// The SpMM kernel is compiled for AVX2 and for baseline x86-64 and picks AVX2 when the CPU has it. Both give
// bitwise identical results. For tests and benchmarks: forbid (false) or allow AVX2; returns the old setting.
bool set_spmm_avx2_allowed(bool allowed);
// "avx2" or "baseline x86-64 (sse2)": the variant spmm uses now.
const char* spmm_instruction_set();

void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream stream = nullptr);

void add_bias(Matrix<float> out, Span<const float> bias, Stream stream = nullptr);
void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream stream = nullptr);
void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream stream = nullptr);
void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params,
             Matrix<float> out, Matrix<float> mask, Stream stream = nullptr);
void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream stream = nullptr);

double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream stream = nullptr);
int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream stream = nullptr);

void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v,
               const AdamParams& params, Stream stream = nullptr);

void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream = nullptr);
void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out,
                      Stream stream = nullptr);

void fill(Span<float> x, float value, Stream stream = nullptr);
void axpy(float alpha, Span<const float> x, Span<float> y, Stream stream = nullptr);
double sum_squares(Span<const float> x, Stream stream = nullptr);


// ---- temporal cells (kernels/cpu/recurrent.cpp, link.cpp) -----------------------------------------------
// Deterministic: elementwise ops have no reductions; pair_dot_backward sums each row's terms in pair order
// (the a-side term of a pair before its b-side term) whatever the thread count; bce_with_logits sums fixed
// blocks in order. sigmoid/tanh use glibc's vector exp/tanh (kernels/cpu/gate_math.cpp, -ffast-math), a
// few ulp from std::exp/std::tanh.
void sigmoid_forward(Matrix<const float> x, Matrix<float> y, Stream stream = nullptr);
void sigmoid_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x,
                      Stream stream = nullptr);
void tanh_forward(Matrix<const float> x, Matrix<float> y, Stream stream = nullptr);
void tanh_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream stream = nullptr);
void relu_forward(Matrix<const float> x, Matrix<float> y, Stream stream = nullptr);
void relu_backward(Matrix<const float> y, Matrix<float> grad, Stream stream = nullptr);
void multiply(Matrix<const float> a, Matrix<const float> b, Matrix<float> out, Stream stream = nullptr);
void scale_add(float alpha, Matrix<const float> x, float beta, Matrix<float> y, Stream stream = nullptr);
void gru_gates(Matrix<const float> pre_z, Matrix<const float> pre_r, Matrix<const float> h_prev, Matrix<float> z,
               Matrix<float> r, Matrix<float> hr, Stream stream = nullptr);
void gru_update(Matrix<const float> pre_h, Matrix<const float> z, Matrix<const float> h_prev, GruMix mix,
                Matrix<float> h_candidate, Matrix<float> h, Stream stream = nullptr);
void gru_update_backward(Matrix<const float> grad_h, Matrix<const float> grad_carry, Matrix<const float> z,
                         Matrix<const float> h_prev, Matrix<const float> h_candidate, GruMix mix,
                         Matrix<float> grad_pre_z, Matrix<float> grad_pre_h, Matrix<float> grad_h_prev,
                         Stream stream = nullptr);
void gru_gates_backward(Matrix<const float> grad_hr, Matrix<const float> r, Matrix<const float> h_prev,
                        Matrix<float> grad_pre_r, Matrix<float> grad_h_prev, Stream stream = nullptr);
void lstm_cell(Matrix<const float> pre, Matrix<const float> c_prev, Matrix<float> gates, Matrix<float> c,
               Matrix<float> h, Stream stream = nullptr);
void lstm_cell_backward(Matrix<const float> grad_h, Matrix<const float> grad_c, Matrix<const float> gates,
                        Matrix<const float> c_prev, Matrix<const float> c, Matrix<float> grad_pre,
                        Matrix<float> grad_c_prev, Stream stream = nullptr);
void pair_dot(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<float> scores,
              Stream stream = nullptr);
void pair_dot_backward(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b,
                       Span<const float> grad_scores, Matrix<float> grad_x, Stream stream = nullptr);
double bce_with_logits(Span<const float> scores, Span<const uint8_t> labels, float scale, Span<float> grad_scores,
                       Stream stream = nullptr);

}  // namespace halogen::kernels::cpu
