#pragma once
// CUDA implementations of the ops of kernels/ops.h, with exactly the same names, signatures and contracts
// (see kernels/ops.h for shapes and semantics). kernels/dispatch.cpp routes kernels::<op> here when the views
// live on Device::cuda. Declared without CUDA headers so that host code can include this file.
//
// GPU specifics:
// - Every op is enqueued on `stream` (a cudaStream_t; nullptr = the legacy default stream) and returns
//   without host synchronisation, except softmax_cross_entropy, count_correct and sum_squares, which return a
//   host scalar and therefore synchronise `stream` once at the end.
// - cuBLAS/cuSPARSE handles exist once per (host thread, device) and are bound to `stream` on each call.
// - spmm caches, per matrix (indptr, indices, values, shape), the cuSPARSE sparse descriptor and a device
//   int32 copy of the row pointers (cuSPARSE needs row offsets and column ids of one index type; our CSR has
//   int64 indptr and int32 indices). Above 2^31 - 1 non-zeros it keeps an int64 copy of the column ids
//   instead. Per (matrix, width) it caches the workspace. Both are made on the first call; later calls
//   create and allocate nothing. release_sparse_cache() frees everything. Freeing an indptr/indices/values
//   Buffer drops that matrix's entry automatically (the device-memory release hook tells the cache), so a
//   matrix later allocated at the same address never meets stale state; call release_sparse_cache() only
//   after rewriting a matrix's indptr/indices in place or for arrays not owned by a Buffer. Calls on one
//   matrix must not run concurrently on two streams (they share the cached workspace).
// - Float sums (spmm, gemm, bias_backward, scatter_add_rows, losses) may be ordered differently from the
//   CPU; dropout masks are bit-identical (same counter-based RNG, core/rng.h).
#include <cstdint>

#include "kernels/ops.h"

namespace halogen::kernels::cuda {

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream stream = nullptr);
void release_sparse_cache();

void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream stream = nullptr);

void add_bias(Matrix<float> out, Span<const float> bias, Stream stream = nullptr);
void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream stream = nullptr);
void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream stream = nullptr);
void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> out,
             Matrix<float> mask, Stream stream = nullptr);
void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream stream = nullptr);

double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream stream = nullptr);
int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream stream = nullptr);

void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v, const AdamParams& params,
               Stream stream = nullptr);

void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream = nullptr);
void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream = nullptr);

void fill(Span<float> x, float value, Stream stream = nullptr);
void axpy(float alpha, Span<const float> x, Span<float> y, Stream stream = nullptr);
double sum_squares(Span<const float> x, Stream stream = nullptr);


// ---- temporal cells (kernels/cuda/recurrent.cu, link.cu) -------------------------------------------------
// pair_dot_backward uses float atomics (order of the additions differs from the CPU); bce_with_logits returns
// a host scalar and synchronises `stream`.
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

}  // namespace halogen::kernels::cuda
