#pragma once
// The engine's ops, one signature per op for both backends. Each function dispatches on the device of its
// views: kernels/cpu/*.cpp implement halogen::kernels::cpu::<op> (OpenMP/OpenBLAS, the reference),
// kernels/cuda/*.cu implement halogen::kernels::cuda::<op> (cuSPARSE/cuBLAS/own kernels), and
// kernels/dispatch.cpp routes kernels::<op> to one of them. All views of one call live on one device.
//
// Conventions (llm.c style): shapes are in the comment beside every pointer/view; "=" overwrites the output,
// "+=" accumulates into it; `stream` is last and is ignored on the CPU (nullptr = default stream).
// Matrices are row-major (core/buffer.h Matrix). Sparse matrices are CSR with int64 row pointers and int32
// local column ids (a shard's columns are [0, n_own) owned then halo rows, always < 2^31).
#include <cstdint>

#include "core/buffer.h"

namespace halogen::kernels {

using Stream = void*;  // cudaStream_t on the GPU, unused on the CPU

// Non-owning CSR view. `values` may be nullptr for an all-ones (pattern) matrix.
struct CsrView {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t nnz = 0;
  const int64_t* indptr = nullptr;   // (rows + 1)
  const int32_t* indices = nullptr;  // (nnz), sorted within a row
  const float* values = nullptr;     // (nnz) or nullptr
  Device device = Device::cpu;
};

// ---- sparse x dense ---------------------------------------------------------------------------------------
// out = A x (accumulate=false) or out += A x (accumulate=true).
//   a: (rows, cols) CSR;  x: (cols, f);  out: (rows, f). Empty rows give zero rows (or leave out unchanged).
// On the GPU the cuSPARSE descriptors for `a` are cached per (indptr pointer, width) so that repeated calls
// create nothing; call release_sparse_cache() before freeing a matrix's arrays.
void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream stream = nullptr);
void release_sparse_cache();

// ---- dense ------------------------------------------------------------------------------------------------
// c = alpha * op(a) op(b) + beta * c, op = transpose when the flag is set (BLAS semantics, row-major views).
//   op(a): (m, k);  op(b): (k, n);  c: (m, n)
void gemm(Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
          float alpha, float beta, Stream stream = nullptr);

// out[r, :] += bias[:] for every row.   out: (n, f);  bias: (f)
void add_bias(Matrix<float> out, Span<const float> bias, Stream stream = nullptr);
// grad_bias[:] += sum over rows of grad_out[r, :].   grad_out: (n, f);  grad_bias: (f)
void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream stream = nullptr);

// Fused epilogue of a hidden layer, in place on `h` (n, f):
//   h = dropout(relu(h + bias))  where bias may be empty (size 0) and relu/dropout may be off.
// Dropout keeps an element with probability 1-p and scales it by 1/(1-p); the decision for element (r, c)
// is rng::uniform(seed, stream_id, row_gid[r] * f + c) >= p, so it depends on the *global* vertex id, not on
// the rank: P ranks draw the same masks as one. `mask` (n, f) records the factor applied (0 or 1/(1-p); 1
// where dropout is off) times the relu indicator, for the backward pass.
struct EpilogueParams {
  bool relu = true;
  float dropout = 0.0f;      // p; 0 = off (inference)
  uint64_t seed = 0;
  uint64_t rng_stream = 0;   // rng::stream_id(kDropout, epoch, layer)
};
void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream stream = nullptr);
// Dropout alone (no relu, no bias) on `x` (n, f) into `out` (n, f); mask as above. Used on input features.
void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> out,
             Matrix<float> mask, Stream stream = nullptr);
// grad[r, c] *= mask[r, c]   (backward of bias_relu_dropout / dropout, in place).   grad, mask: (n, f)
void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream stream = nullptr);

// ---- loss and metrics -------------------------------------------------------------------------------------
// Masked softmax cross-entropy over the rows listed in `rows` (local ids).
//   logits: (n, c);  labels: (n) int32 class ids;  rows: (m);  grad_logits: (n, c) "=" (zero outside `rows`)
// Returns the *sum* of -log softmax(logits[r])[labels[r]] over `rows`. grad_logits = (softmax - onehot) * scale
// on those rows (the caller passes scale = 1 / global training count, so P ranks sum to the global mean).
// Rows with label < 0 are an error the caller prevents. Numerically stable (max subtracted).
double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream stream = nullptr);
// Number of rows in `rows` whose argmax(logits[r]) == labels[r] (ties -> lowest index).
int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream stream = nullptr);

// ---- optimiser --------------------------------------------------------------------------------------------
// Adam with PyTorch semantics (torch.optim.Adam, L2 weight decay added to the gradient):
//   g = grad + weight_decay * param;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   param -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)          t = step, starting at 1
// All spans: (n).
struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  int64_t step = 1;
};
void adam_step(Span<float> param, Span<const float> grad, Span<float> m, Span<float> v, const AdamParams& params,
               Stream stream = nullptr);

// ---- halo packing -----------------------------------------------------------------------------------------
// out[i, :] = x[idx[i], :]            x: (n, f);  idx: (m);  out: (m, f)      (pack rows to send)
void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream = nullptr);
// out[idx[i], :] += x[i, :]           x: (m, f);  idx: (m);  out: (n, f)      (reverse exchange: add partial
// sums received for owned rows). Duplicate indices accumulate (serially per row on the CPU; atomics on GPU).
void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream stream = nullptr);

// ---- elementwise helpers ----------------------------------------------------------------------------------
void fill(Span<float> x, float value, Stream stream = nullptr);
// y += alpha * x   (n)
void axpy(float alpha, Span<const float> x, Span<float> y, Stream stream = nullptr);
// Sum of squares (for gradient norms / NaN checks); returns NaN if any element is NaN or Inf.
double sum_squares(Span<const float> x, Stream stream = nullptr);

// ---- temporal tasks ---------------------------------------------------------------------------------------
// Squared error: returns sum over (r, c) of (y - target)^2 (in double); grad_y "=" grad_scale * (y - target)
// when grad_y is not empty (rows == 0: value only). The caller passes grad_scale = 2 * scale / N for the
// gradient of scale * mean over N. y, target, grad_y: (n, f). Synchronises `stream` (returns a host scalar).
double squared_error(Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y,
                     Stream stream = nullptr);

}  // namespace halogen::kernels
