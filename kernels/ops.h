#pragma once
// The engine's ops, one signature per op for both backends: the public contract of kernels/. Each
// kernels::<op> dispatches on the device of its views (kernels/dispatch.cpp): kernels/cpu/*.cpp implement
// halogen::kernels::cpu::<op> (OpenMP/OpenBLAS, the reference); kernels/cuda/*.cu implement
// halogen::kernels::cuda::<op> (cuSPARSE/cuBLAS/own kernels) inside the CUDA backend library
// (libhalogen_cuda.so), which is loaded at run time on the first use of a device (kernels/device.h). All views
// of one call live on one device.
//
// Conventions (llm.c style): shapes are in the comment beside every pointer/view; "=" overwrites the output,
// "+=" accumulates into it; `stream` is last and is ignored on the CPU (nullptr = default stream).
// Matrices are row-major (core/buffer.h Matrix). Sparse matrices are CSR with int64 row pointers and int32
// local column ids (a shard's columns are [0, n_own) owned then halo rows, always < 2^31).
//
// The signatures are written once, in kernels/op_list.h; this file, kernels/cpu/ops.h, kernels/cuda/ops.h, the
// backend table (kernels/backend.h) and the dispatcher are generated from it. The contracts are below, one
// section per group of ops, in the list's order.
//
// Adding an op `foo`:
//   1. one HALOGEN_OP(...) line in kernels/op_list.h (the format is described there);
//   2. its contract comment in the matching section below (parameter structs, if any, go here too);
//   3. `void cpu::foo(...)` in kernels/cpu/<file>.cpp and `void cuda::foo(...)` in kernels/cuda/<file>.cu,
//      with the list's parameters plus `Stream stream` last;
//   4. a test comparing the two (tests/gpu/).
// Nothing else: the declarations, the backend's function table (and its ABI version, which is a hash of the
// list) and kernels::foo follow from step 1.
#include <cstdint>

#include "core/bf16.h"
#include "core/buffer.h"

namespace halogen::kernels {

using Stream = void*;  // cudaStream_t on the GPU, unused on the CPU

// Non-owning CSR view. `values` may be nullptr: the value of entry k in row r is then
//   (row_scale ? row_scale[r] : 1) * (col_scale ? col_scale[indices[k]] : 1),
// an all-ones (pattern) matrix without scales; the scales are read only when values == nullptr (a normalised
// adjacency whose values are a product of per-row and per-column factors, graph/local_graph.h). Only the CPU
// spmm takes scales; the GPU's matrices hold stored values (nn::DeviceCsr materialises them).
struct CsrView {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t nnz = 0;
  const int64_t* indptr = nullptr;   // (rows + 1)
  const int32_t* indices = nullptr;  // (nnz), sorted within a row
  const float* values = nullptr;     // (nnz) or nullptr
  Device device = Device::cpu;
  const float* row_scale = nullptr;  // (rows) or nullptr; only with values == nullptr
  const float* col_scale = nullptr;  // (cols) or nullptr; only with values == nullptr
  bool scaled() const { return row_scale != nullptr || col_scale != nullptr; }
};

// ---- sparse x dense ---------------------------------------------------------------------------------------
// spmm: out = A x (accumulate=false) or out += A x (accumulate=true).
//   a: (rows, cols) CSR;  x: (cols, f);  out: (rows, f). Empty rows give zero rows (or leave out unchanged).
// On the GPU the cuSPARSE descriptors for `a` are cached per (indptr pointer, width) so that repeated calls
// create nothing; call release_sparse_cache() before freeing a matrix's arrays.
// With scales (CPU only): out[r] "=" row_scale[r] * sum_k col_scale[c_k] x[c_k] (the row scale applied once
// to the row's sum; accumulating, out[r] = out[r] + row_scale[r] * sum). The CUDA backend rejects them.

// ---- BF16 storage ------------------------------------------------------------------------------------------
// BF16 (core/bf16.h) holds features, saved activations and halo rows under --precision bf16; every product
// widens its BF16 inputs exactly and accumulates in FP32, into FP32 outputs.
// convert_to_bf16:   out = bf16(x), round to nearest even, NaN kept (core/bf16.h to_bf16).  x, out: (n, f)
// convert_from_bf16: out = float(x) (exact).                                                  x, out: (n, f)
// scale_round_bf16:  out[r, :] = bf16(scale[r] * x[r, :]): scale_rows then convert_to_bf16 in one pass, bit for
//   bit (one float multiply, then the rounding).                            scale: (n);  x, out: (n, f)
// spmm_bf16: spmm (above, same scales and "="/"+=") with x in BF16: out = A float(x). A's values stay FP32.
//   a: (rows, cols);  x: (cols, f) BF16;  out: (rows, f) FP32. The CPU result is bitwise equal to spmm of
//   float(x) (same order of additions).
// gemm_bf16: c = alpha * op(a) op(b) + beta * c with a and b in BF16 and c in FP32 (gemm's semantics). Each
//   product of two BF16 values is exact in FP32; the sums are FP32 in an order that depends on the kernel
//   (CPU: AVX512-BF16 dot products where the CPU has them, else each block widened to FP32 and multiplied by
//   the FP32 BLAS; set_gemm_bf16_avx512_allowed in kernels/cpu/ops.h). op(a): (m, k);  op(b): (k, n);  c: (m, n)
// gather_rows_bf16:      out[i, :] = x[idx[i], :]           (BF16 -> BF16)  x: (n, f);  idx: (m);  out: (m, f)
// scatter_add_rows_bf16: out[idx[i], :] += float(x[i, :])   (BF16 -> FP32)  x: (m, f);  idx: (m);  out: (n, f)
//   (scatter_add_rows's order and duplicate rules).

// ---- dense ------------------------------------------------------------------------------------------------
// gemm: c = alpha * op(a) op(b) + beta * c, op = transpose when the flag is set (BLAS semantics, row-major views).
//   op(a): (m, k);  op(b): (k, n);  c: (m, n)

// add_bias: out[r, :] += bias[:] for every row.   out: (n, f);  bias: (f)
// bias_backward: grad_bias[:] += sum over rows of grad_out[r, :].   grad_out: (n, f);  grad_bias: (f)

// bias_relu_dropout: fused epilogue of a hidden layer, in place on `h` (n, f):
//   h = dropout(relu(h + bias))  where bias may be empty (size 0) and relu/dropout may be off.
// Dropout keeps an element with probability 1-p and scales it by 1/(1-p); the decision for element (r, c)
// is rng::dropout_keep(seed, stream_id, row_gid[r] * f + c, rng::dropout_threshold(p)) (a 32-bit word of a
// Philox call that serves four neighbouring elements), so it depends on the *global* vertex id, not on the
// rank or the backend: P ranks draw the same masks as one, the CPU the same as the GPU. `mask` (n, f) records the factor applied (0 or 1/(1-p); 1
// where dropout is off) times the relu indicator, for the backward pass.
struct EpilogueParams {
  bool relu = true;
  float dropout = 0.0f;      // p; 0 = off (inference)
  uint64_t seed = 0;
  uint64_t rng_stream = 0;   // rng::stream_id(kDropout, epoch, layer)
};
// dropout: dropout alone (no relu, no bias) on `x` (n, f) into `out` (n, f); mask as above. Used on input features.
// dropout_bf16: dropout of BF16 `x` (n, f) into FP32 `out` (n, f), no mask: bit for bit convert_from_bf16 then
//   dropout (the same decisions, out = float(x) * factor), in one pass (BF16 features, --precision bf16).
// dropout_scale_round_bf16: BF16 `x` (n, f) dropped out, scaled by row and rounded into BF16 `out` (n, f):
//   out[r, c] = bf16(float(x[r, c]) * factor * scale[r]) (scale empty: no scaling), bit for bit dropout_bf16
//   then scale_round_bf16 (or convert_to_bf16), in one pass and without the FP32 matrix between them (a GCN
//   first layer's input under --precision bf16: BF16 features into the staging buffer).
// apply_mask: grad[r, c] *= mask[r, c]   (backward of bias_relu_dropout / dropout, in place).   grad, mask: (n, f)
// relu_dropout_backward: the backward of bias_relu_dropout (relu on) without its mask, read off its output:
//   grad[r, c] *= (out[r, c] > 0 ? 1/(1-p) : 0), p = dropout, in place; then, when grad_bias is not empty,
//   grad_bias[:] += the column sums of the new grad (bias_backward's summation order and result).
// An element is positive after the epilogue exactly when it was kept and its pre-activation was positive
// (1/(1-p) >= 1 cannot round a positive value to 0), which is when the recorded mask is 1/(1-p); so the result
// is bit for bit apply_mask with that mask followed by bias_backward, with one pass instead of two and no
// (n, f) mask written in the forward pass. grad, out: (n, f); grad_bias: (f) or empty

// ---- loss and metrics -------------------------------------------------------------------------------------
// softmax_cross_entropy: masked softmax cross-entropy over the rows listed in `rows` (local ids).
//   logits: (n, c);  labels: (n) int32 class ids;  rows: (m);  grad_logits: (n, c) "=" (zero outside `rows`)
// Returns the *sum* of -log softmax(logits[r])[labels[r]] over `rows`. grad_logits = (softmax - onehot) * scale
// on those rows (the caller passes scale = 1 / global training count, so P ranks sum to the global mean).
// Rows with label < 0 are an error the caller prevents. Numerically stable (max subtracted).
// count_correct: number of rows in `rows` whose argmax(logits[r]) == labels[r] (ties -> lowest index).

// ---- optimiser --------------------------------------------------------------------------------------------
// adam_step: Adam with PyTorch semantics (torch.optim.Adam, L2 weight decay added to the gradient):
//   g = grad + weight_decay * param;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   param -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)          t = step, starting at 1
// All spans: (n).
struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  float grad_scale = 1.0f;  // the gradient is multiplied by this first (clipping), then weight decay is added
  int64_t step = 1;
};

// ---- halo packing -----------------------------------------------------------------------------------------
// gather_rows:      out[i, :] = x[idx[i], :]     x: (n, f);  idx: (m);  out: (m, f)   (pack rows to send)
// scatter_add_rows: out[idx[i], :] += x[i, :]    x: (m, f);  idx: (m);  out: (n, f)   (reverse exchange: add
// partial sums received for owned rows). Duplicate indices accumulate (serially per row in index order on the CPU;
// atomics on the GPU, so in no fixed order: HaloExchange scatters each peer's rows, which are distinct, separately).
// scale_rows:       x[r, :] *= scale[r]          scale: (n);  x: (n, f)   (one float multiply per element: an
// spmm by a column-scaled CsrView equals, bit for bit, the spmm without the column scale of the rows scaled first)

// ---- elementwise helpers ----------------------------------------------------------------------------------
// fill: x[:] = value   (n)
// axpy: y += alpha * x   (n)
// sum_squares: sum of squares (for gradient norms / NaN checks); returns NaN if any element is NaN or Inf.

// ---- GIN: the learnable epsilon --------------------------------------------------------------------------
// GIN's self term with a learnable eps that lives on the device (no host read in the training loop):
// one_plus_eps_add: out += (1 + eps[0]) * x.   x, out: (n, f), may be strided;  eps: (1)
// dot_add: result[0] += sum over (r, c) of a[r, c] * b[r, c] (the gradient of eps: <x, grad>), each thread's
//   or block's terms summed in double; the CPU adds fixed row blocks in order (thread-count independent), the
//   GPU adds its block sums with float atomics (order varies run to run: ~1e-7 relative).
//   a, b: (n, f), may be strided;  result: (1)

// ---- temporal tasks ---------------------------------------------------------------------------------------
// squared_error: returns the sum over (r, c) of (y - target)^2 (in double); grad_y "=" grad_scale * (y - target)
// when grad_y is not empty (rows == 0: value only). The caller passes grad_scale = 2 * scale / N for the
// gradient of scale * mean over N. y, target, grad_y: (n, f). Synchronises `stream` (returns a host scalar).

// ==== temporal cells: activations, GRU gates, link scores ==================================================
// Elementwise ops of the recurrent cells (nn/tgcn.cpp, nn/gconvgru.cpp, nn/evolve_gcn.cpp), their head
// (nn/relu_linear_head.cpp) and the link task's scores (train/link_task.cpp). Every matrix view may be a
// column block of a wider matrix (stride >= cols); all views of one call have the same shape (n, f).
// "May alias" = the output may be the same memory as that input (each element is read before it is written);
// outputs must not otherwise overlap inputs.

// y = sigmoid(x) = 1 / (1 + exp(-x)).              x, y: (n, f); y may alias x.
// grad_x = grad_y * y * (1 - y), y = sigmoid(x).    y, grad_y, grad_x: (n, f); grad_x may alias grad_y.
// y = tanh(x).                                      x, y: (n, f); y may alias x.
// grad_x = grad_y * (1 - y * y), y = tanh(x).       y, grad_y, grad_x: (n, f); grad_x may alias grad_y.
// y = max(x, 0).                                    x, y: (n, f); y may alias x.
// grad = y > 0 ? grad : 0, in place; y = relu(x) (or x itself: same sign test).   y, grad: (n, f)
// out = a * b elementwise.                          a, b, out: (n, f); out may alias a or b.
// (Its backward is two more calls: grad_a = grad_out * b, grad_b = grad_out * a.)
// y = alpha * x + beta * y; beta == 0 does not read y (a scaled copy: y = x for alpha = 1).   x, y: (n, f);
// y may alias x (in-place scaling).

// GRU gates, fused (one pass each). A GRU step from state h_prev with gate pre-activations pre_z, pre_r, pre_h
// (the products, computed by gemm/spmm, pre_h from hr = r o h_prev) is
//   z = sigmoid(pre_z),  r = sigmoid(pre_r),  hr = r o h_prev                              gru_gates
//   h~ = tanh(pre_h),    h = z o h_prev + (1 - z) o h~     GruMix::z_keeps_state            gru_update
//                        h = (1 - z) o h_prev + z o h~     GruMix::z_takes_candidate
// z_keeps_state is PyTorch's GRU and PyG Temporal's TGCN/GConvGRU; z_takes_candidate is EvolveGCN's matrix GRU.
// (enum GruMix: above the generated declarations)
// pre_z, pre_r, h_prev, z, r, hr: (n, h). z may alias pre_z, r may alias pre_r.
// pre_h, z, h_prev, h_candidate, h: (n, h). h_candidate "=" tanh(pre_h) (may alias pre_h); h "=" the mix (may
// alias h_prev).
// Backward of gru_update. With d = grad_h + grad_carry (grad_carry: a second gradient of h, e.g. the one
// carried back from the next step; an empty view (rows == 0) means none):
//   z_keeps_state:     grad_pre_z = d (h_prev - h~) z (1 - z),  grad_pre_h = d (1 - z) (1 - h~^2),  g = d z
//   z_takes_candidate: grad_pre_z = d (h~ - h_prev) z (1 - z),  grad_pre_h = d z (1 - h~^2),        g = d (1 - z)
// all "=", g into grad_h_prev (the direct term of dLoss/dh_prev; may alias grad_carry or grad_h).
// grad_h, grad_carry, z, h_prev, h_candidate, grad_pre_z, grad_pre_h, grad_h_prev: (n, h)
// Backward of hr = r o h_prev, r = sigmoid(pre_r), given grad_hr = dLoss/dhr:
//   grad_pre_r "=" grad_hr h_prev r (1 - r),   grad_h_prev "+=" grad_hr r.
// grad_hr, r, h_prev, grad_pre_r, grad_h_prev: (n, h); grad_pre_r may alias grad_hr.

// LSTM cell, fused (PyTorch's gate order i, f, g, o). pre = [pre_i | pre_f | pre_g | pre_o] are the gate
// pre-activations (the products, by gemm/spmm):
//   i = sigmoid(pre_i), f = sigmoid(pre_f), g = tanh(pre_g), o = sigmoid(pre_o),
//   c = f o c_prev + i o g,  h = o o tanh(c).
// gates "=" [i | f | g | o] (kept for backward; may alias pre), c "=", h "=".
//   pre, gates: (n, 4h);  c_prev, c, h: (n, h)
// Backward of lstm_cell. grad_h = dLoss/dh; grad_c = dLoss/dc from later steps (empty view: none). With
// t = tanh(c), dc = grad_c + grad_h o o o (1 - t^2):
//   grad_pre "=" [dc g i (1 - i) | dc c_prev f (1 - f) | dc i (1 - g^2) | grad_h t o (1 - o)],
//   grad_c_prev "=" dc o f (may alias grad_c).
//   grad_h, grad_c, c_prev, c, grad_c_prev: (n, h);  gates, grad_pre: (n, 4h)

// Link scores: scores[k] = <x[a[k], :], x[b[k], :]>, summed in double and rounded once.
//   x: (n, f);  a, b: (m) row ids in [0, n);  scores: (m)
// Backward of pair_dot: for every k, grad_x[a[k], :] += grad_scores[k] x[b[k], :] and
// grad_x[b[k], :] += grad_scores[k] x[a[k], :] ("+="). grad_x must not overlap x.
//   x, grad_x: (n, f);  a, b, grad_scores: (m)
// Binary cross-entropy with logits over m scores with labels 0/1: returns the *sum* of
// softplus(s_k) - label_k s_k (stable: max(s, 0) + log1p(exp(-|s|)) - label s, in double), and
// grad_scores[k] "=" (sigmoid(s_k) - label_k) * scale (the caller's scale makes the sum a mean over ranks).
//   scores, labels, grad_scores: (m); labels are 0 or 1.

// ==== GAT (Velickovic et al.): attention from three general sparse ops (DGL's gsddmm / edge_softmax / gspmm) ====
// A is the attention graph of a rank: CSR with `rows` destination vertices (the owned ones) and `cols` source
// vertices (owned then halo), self-loops included; its edges are numbered by CSR position e in [0, nnz). K heads
// of width F: a node matrix H (cols, K*F) holds head k in columns [k*F, (k+1)*F); an edge matrix (nnz, K) holds
// head k of edge e at (e, k). Every node view may be strided (a column block of a wider matrix); edge views are
// contiguous (stride K). The transpose A^T (`a_t`: cols rows, rows columns, values unused) lists, for each
// source vertex, its edges; a_t_edge[p] is the edge id (CSR position in A) of A^T's p-th entry. A row-range of
// A^T (indptr offset, the same indices and a_t_edge arrays) is a valid a_t: its row r is source row_offset + r.
// Every op is row-parallel over its own CSR (no atomics on the CPU, none on the GPU: deterministic).
//
// head_scores: s[i, k] "=" sum_f h[i, k*F + f] * att[k, f].       h: (n, K*F);  att: (K, F);  s: (n, K)
// head_scores_backward: grad_h[i, k*F + f] "+=" grad_s[i, k] * att[k, f];
//   grad_att[k, f] "+=" sum_i grad_s[i, k] * h[i, k*F + f] (fixed row blocks in order: thread-count
//   independent on the CPU).                     h, grad_h: (n, K*F);  att, grad_att: (K, F);  grad_s: (n, K)
// gat_edge_scores (SDDMM): scores[e, k] "=" leaky_relu(s_dst[i, k] + s_src[j, k], slope) for edge e = (i, j).
//   s_dst: (rows, K);  s_src: (cols, K);  scores: (nnz, K)
// gat_edge_scores_backward: given grad_scores = dLoss/dscores, overwrites it IN PLACE with dLoss/dz (z = s_dst
//   + s_src before the leaky relu; slope where z <= 0), then grad_s_dst[i, k] "=" sum over row i's edges,
//   grad_s_src[r, k] "=" sum over a_t's row r (the edges whose source is a_t row r).
//   s_dst, grad_s_dst: (rows, K);  s_src: (cols, K);  grad_s_src: (a_t.rows, K);  grad_scores: (nnz, K)
// edge_softmax: in place, per destination row and head: scores[e, k] = exp(x_e - max) / sum exp(x - max) over
//   the row's edges (numerically stable). Empty rows: nothing.                scores: (nnz, K)
// edge_softmax_backward: in place, grad[e, k] = alpha[e, k] * (grad[e, k] - sum_{e' in row} alpha[e', k]
//   grad[e', k]) (dLoss/dscores from dLoss/dalpha).                           alpha, grad: (nnz, K)
// edge_dropout: out[e, k] "=" in[e, k] * (keep ? 1 / (1 - p) : 0); `out` may alias `in`. The decision for edge
//   e = (i, j), head k: with key = rng::uniform_u64(seed, rng_stream, k / 4) and
//   w = rng::pair_bits(key, row_gid[i], col_gid[j]).v[k % 4], keep iff rng::word_uniform(w) >= p: it depends on
//   the edge's global (destination, source) ids only, so P ranks draw what one rank draws, and the backward
//   recomputes the same mask by calling it on the gradient. p = params.dropout (0: a copy); params.relu unused.
//   row_gid: (rows);  col_gid: (cols);  in, out: (nnz, K)
// weighted_spmm: out[i, k*F + f] "=" sum_{e = (i, j)} weights[e, k] * x[j, k*F + f] (zero for empty rows).
//   weights: (nnz, K);  x: (cols, K*F);  out: (rows, K*F)
// weighted_spmm_transpose: out[r, k*F + f] "=" sum over a_t's row r of weights[e, k] * g[i, k*F + f], e =
//   a_t_edge[p], i = a_t.indices[p] (A^T g with per-head edge weights).
//   weights: (nnz, K);  g: (a_t.cols, K*F);  out: (a_t.rows, K*F)
// edge_dot (SDDMM, the gradient of weighted_spmm's weights): out[e, k] "=" sum_f g[i, k*F + f] x[j, k*F + f].
//   g: (rows, K*F);  x: (cols, K*F);  out: (nnz, K)
// gat_attention (fused GAT attention, forward): per destination row i and head k, in ONE pass over the row's
//   edges e = (i, j) (chunks of 64 edges: their scores, the chunk's max, then an online softmax that rescales
//   the row's running sum and accumulator when the max grows):
//     z_e = leaky_relu(s_dst[i, k] + s_src[j, k], slope),  alpha_e = exp(z_e - m_i) / l_i  (m_i the row's max,
//     l_i = sum_e exp(z_e - m_i)),  alpha~_e = alpha_e * (keep_e ? 1 / (1 - p) : 0)  (edge_dropout's decision
//     for (row_gid[i], col_gid[j], k), so the mask is edge_dropout's),
//     out[i, k*F + f] "=" sum_e alpha~_e x[j, k*F + f],  stats[i, k] "=" m_i,  stats[i, K + k] "=" 1 / l_i
//   (empty rows: out 0, stats (-inf, 0)). No per-edge tensor: what the backward needs is the O(rows K) stats.
//   p = params.dropout (0: no dropout).   s_dst: (rows, K);  s_src: (cols, K);  x: (cols, K*F);
//   out: (rows, K*F);  stats: (rows, 2K)
// gat_attention_backward: given g = dLoss/dout, recomputes every edge's z, alpha and mask from s_dst, s_src,
//   stats and the ids (no per-edge tensor), with t_e = g[i, head k] . x[j, head k] and td_e = t_e * factor_e:
//     row_dot[i, k] "=" S_i = sum_e alpha_e td_e             (pass 1, by destination row of a)
//     dz_e = alpha_e (td_e - S_i) * (z > 0 ? 1 : slope)       (z = s_dst + s_src before the leaky relu)
//     grad_s_dst[i, k] "=" sum over row i of dz_e              (pass 1, a second walk over the row's cached edges)
//     grad_x[r, k*F + f] "=" sum over a_t's row r of alpha~_e g[i, k*F + f];  grad_s_src[r, k] "=" sum of dz_e
//                                                              (pass 2, by source row of a_t, i = a_t.indices[p])
//   The same float operations in the same order as gat_edge_scores_backward(edge_softmax_backward(edge_dropout(
//   edge_dot))) and weighted_spmm_transpose. a_t: A's full transpose (a_t.rows == a.cols).
//   stats: (rows, 2K) from gat_attention;  g: (rows, K*F);  row_dot, grad_s_dst: (rows, K);
//   x, grad_x: (cols, K*F);  grad_s_src: (cols, K)
// elu_dropout: in place, h = dropout(elu(h)) with elu(x) = x > 0 ? x : expm1(x), and dropout as
//   bias_relu_dropout's (keyed by row_gid[r] * f + c); mask (n, f) "=" the factor (0 or 1/(1-p)) times elu'(x)
//   (1 or exp(x)), so that apply_mask is the backward; an empty mask is not written. h, mask: (n, f)

// How gru_update mixes the state and the candidate (see above).
enum class GruMix { z_keeps_state, z_takes_candidate };

// ---- the declarations (generated from kernels/op_list.h) ------------------------------------------------------
#define HALOGEN_UNPAREN(...) __VA_ARGS__
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) \
  return_type name(HALOGEN_UNPAREN parameters, Stream stream = nullptr);
#include "kernels/op_list.h"
#undef HALOGEN_OP

// Frees the cached sparse-matrix state of every backend (see spmm); the CUDA backend's only when it is loaded.
void release_sparse_cache();

// Work of the products this thread has called so far, on either device, for rooflines (nn::PhaseClock, `bench
// epoch`). Sparse products (spmm, weighted_spmm, weighted_spmm_transpose, edge_dot) count the bytes of `bench
// spmm`'s model: row pointers (8 per row), column ids (4), values, edge ids or attention weights (4 each per
// nonzero, per head) once, one gathered row of the dense input per nonzero (4 per column), the output rows once
// (twice when accumulated), the row and column factors of a scaled matrix; and 2 flops per nonzero and column.
// gemm counts 2 m n k flops and its three matrices once (c twice with beta != 0). Other ops count nothing.
struct WorkCount {
  double bytes = 0, flops = 0;
};
const WorkCount& work_count();

// Progress during a long CPU product. While a ProgressHook lives on a thread, the CPU spmm that this thread
// calls cuts its rows into chunks of at most about kProgressChunkCost nonzeros and runs fn(context) on this
// thread (OpenMP's master thread of the product) after each chunk it computed. The distributed adjacency uses
// it to call MPI progress for the halo exchange in flight: MPI over TCP moves a message only inside MPI calls,
// so without it the exchange would wait for the final MPI wait and hide nothing (docs/train.md, "Overlap").
// fn must be cheap (a few microseconds). Hooks do not nest; the GPU kernels ignore them.
using ProgressFn = void (*)(void* context);
class ProgressHook {
 public:
  ProgressHook(ProgressFn fn, void* context);
  ~ProgressHook();
  ProgressHook(const ProgressHook&) = delete;
  ProgressHook& operator=(const ProgressHook&) = delete;
};
inline constexpr int64_t kProgressChunkCost = 32768;
namespace detail {
struct ProgressState {
  ProgressFn fn = nullptr;
  void* context = nullptr;
};
const ProgressState& progress_state();  // of the calling thread (fn == nullptr: no hook)
}  // namespace detail

}  // namespace halogen::kernels
