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

// temporal tasks
double squared_error(Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y,
                     Stream stream = nullptr);

}  // namespace halogen::kernels::cpu
