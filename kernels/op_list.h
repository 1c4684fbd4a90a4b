// The list of the engine's ops: the ONE place where an op's signature is written. No include guard: this file
// is included once per use, with HALOGEN_OP defined by the includer (an "X-macro" list, like LLVM's .def files):
//   kernels/ops.h       declares halogen::kernels::<op>        (the dispatching entry point everyone calls)
//   kernels/cpu/ops.h   declares halogen::kernels::cpu::<op>   (OpenMP/OpenBLAS, the reference)
//   kernels/cuda/ops.h  declares halogen::kernels::cuda::<op>  (in the CUDA backend library)
//   kernels/backend.h   makes one function pointer per op in the CUDA backend's table
//   kernels/dispatch.cpp defines halogen::kernels::<op>: cpu::<op> for host views, the table's <op> for device
//                        views
//
//   HALOGEN_OP(return_type, name, dispatch_device, (parameters), (arguments))
//     parameters: the op's parameters WITHOUT the trailing `Stream stream`, which every op takes last (the
//                 declarations add it, defaulted to nullptr);
//     arguments:  the parameter names, in order, without `stream`;
//     dispatch_device: an expression over the parameters naming the device that picks the backend (the
//                 device of the op's output or first view).
// The contract of each op (shapes, "=" or "+=") is in kernels/ops.h, in the section of the same name.
//
// Adding an op = one line here (plus its contract comment in kernels/ops.h, and its cpu and cuda
// definitions). Every declaration, the backend table and the dispatcher follow from this line.
#ifndef HALOGEN_OP
#error "define HALOGEN_OP(return_type, name, dispatch_device, (parameters), (arguments)) before including op_list.h"
#endif

// ---- sparse x dense ------------------------------------------------------------------------------------------
HALOGEN_OP(void, spmm, a.device, (const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate),
           (a, x, out, accumulate))

// ---- BF16 storage (--precision bf16): conversion, products with BF16 inputs and FP32 accumulation, halo rows ---
HALOGEN_OP(void, convert_to_bf16, out.device, (Matrix<const float> x, Matrix<Bf16> out), (x, out))
HALOGEN_OP(void, convert_from_bf16, out.device, (Matrix<const Bf16> x, Matrix<float> out), (x, out))
HALOGEN_OP(void, scale_round_bf16, out.device, (Span<const float> scale, Matrix<const float> x, Matrix<Bf16> out),
           (scale, x, out))
HALOGEN_OP(void, spmm_bf16, a.device, (const CsrView& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate),
           (a, x, out, accumulate))
HALOGEN_OP(void, gemm_bf16, c.device,
           (Matrix<const Bf16> a, bool transpose_a, Matrix<const Bf16> b, bool transpose_b, Matrix<float> c,
            float alpha, float beta),
           (a, transpose_a, b, transpose_b, c, alpha, beta))
HALOGEN_OP(void, gather_rows_bf16, out.device, (Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<Bf16> out),
           (x, idx, out))
HALOGEN_OP(void, scatter_add_rows_bf16, out.device,
           (Matrix<const Bf16> x, Span<const int32_t> idx, Matrix<float> out), (x, idx, out))

// ---- dense ---------------------------------------------------------------------------------------------------
HALOGEN_OP(void, gemm, c.device,
           (Matrix<const float> a, bool transpose_a, Matrix<const float> b, bool transpose_b, Matrix<float> c,
            float alpha, float beta),
           (a, transpose_a, b, transpose_b, c, alpha, beta))
HALOGEN_OP(void, add_bias, out.device, (Matrix<float> out, Span<const float> bias), (out, bias))
HALOGEN_OP(void, bias_backward, grad_out.device, (Matrix<const float> grad_out, Span<float> grad_bias),
           (grad_out, grad_bias))
HALOGEN_OP(void, bias_relu_dropout, h.device,
           (Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid, const EpilogueParams& params,
            Matrix<float> mask),
           (h, bias, row_gid, params, mask))
HALOGEN_OP(void, dropout, out.device,
           (Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> out,
            Matrix<float> mask),
           (x, row_gid, params, out, mask))
HALOGEN_OP(void, dropout_bf16, out.device,
           (Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> out),
           (x, row_gid, params, out))
HALOGEN_OP(void, dropout_scale_round_bf16, out.device,
           (Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params, Span<const float> scale,
            Matrix<Bf16> out),
           (x, row_gid, params, scale, out))
HALOGEN_OP(void, apply_mask, grad.device, (Matrix<float> grad, Matrix<const float> mask), (grad, mask))
HALOGEN_OP(void, relu_dropout_backward, grad.device,
           (Matrix<float> grad, Matrix<const float> out, float dropout, Span<float> grad_bias),
           (grad, out, dropout, grad_bias))

// ---- loss and metrics ----------------------------------------------------------------------------------------
HALOGEN_OP(double, softmax_cross_entropy, logits.device,
           (Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows, float scale,
            Matrix<float> grad_logits),
           (logits, labels, rows, scale, grad_logits))
HALOGEN_OP(int64_t, count_correct, logits.device,
           (Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows),
           (logits, labels, rows))

// ---- optimiser -----------------------------------------------------------------------------------------------
HALOGEN_OP(void, adam_step, param.device,
           (Span<float> param, Span<const float> grad, Span<float> m, Span<float> v, const AdamParams& params),
           (param, grad, m, v, params))

// ---- halo packing --------------------------------------------------------------------------------------------
HALOGEN_OP(void, gather_rows, out.device, (Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out),
           (x, idx, out))
HALOGEN_OP(void, scale_rows, x.device, (Span<const float> scale, Matrix<float> x), (scale, x))
HALOGEN_OP(void, scatter_add_rows, out.device, (Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out),
           (x, idx, out))

// ---- elementwise helpers -------------------------------------------------------------------------------------
HALOGEN_OP(void, fill, x.device, (Span<float> x, float value), (x, value))
HALOGEN_OP(void, axpy, y.device, (float alpha, Span<const float> x, Span<float> y), (alpha, x, y))
HALOGEN_OP(double, sum_squares, x.device, (Span<const float> x), (x))

// ---- GIN: the learnable epsilon ------------------------------------------------------------------------------
HALOGEN_OP(void, one_plus_eps_add, out.device, (Matrix<const float> x, Span<const float> eps, Matrix<float> out),
           (x, eps, out))
HALOGEN_OP(void, dot_add, result.device, (Matrix<const float> a, Matrix<const float> b, Span<float> result),
           (a, b, result))

// ---- temporal tasks ------------------------------------------------------------------------------------------
HALOGEN_OP(double, squared_error, y.device,
           (Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y),
           (y, target, grad_scale, grad_y))

// ---- temporal cells: activations, GRU/LSTM gates, link scores -----------------------------------------------
HALOGEN_OP(void, sigmoid_forward, y.device, (Matrix<const float> x, Matrix<float> y), (x, y))
HALOGEN_OP(void, sigmoid_backward, grad_x.device,
           (Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x), (y, grad_y, grad_x))
HALOGEN_OP(void, tanh_forward, y.device, (Matrix<const float> x, Matrix<float> y), (x, y))
HALOGEN_OP(void, tanh_backward, grad_x.device,
           (Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x), (y, grad_y, grad_x))
HALOGEN_OP(void, relu_forward, y.device, (Matrix<const float> x, Matrix<float> y), (x, y))
HALOGEN_OP(void, relu_backward, grad.device, (Matrix<const float> y, Matrix<float> grad), (y, grad))
HALOGEN_OP(void, multiply, out.device, (Matrix<const float> a, Matrix<const float> b, Matrix<float> out),
           (a, b, out))
HALOGEN_OP(void, scale_add, y.device, (float alpha, Matrix<const float> x, float beta, Matrix<float> y),
           (alpha, x, beta, y))
HALOGEN_OP(void, gru_gates, z.device,
           (Matrix<const float> pre_z, Matrix<const float> pre_r, Matrix<const float> h_prev, Matrix<float> z,
            Matrix<float> r, Matrix<float> hr),
           (pre_z, pre_r, h_prev, z, r, hr))
HALOGEN_OP(void, gru_update, h.device,
           (Matrix<const float> pre_h, Matrix<const float> z, Matrix<const float> h_prev, GruMix mix,
            Matrix<float> h_candidate, Matrix<float> h),
           (pre_h, z, h_prev, mix, h_candidate, h))
HALOGEN_OP(void, gru_update_backward, grad_h_prev.device,
           (Matrix<const float> grad_h, Matrix<const float> grad_carry, Matrix<const float> z,
            Matrix<const float> h_prev, Matrix<const float> h_candidate, GruMix mix, Matrix<float> grad_pre_z,
            Matrix<float> grad_pre_h, Matrix<float> grad_h_prev),
           (grad_h, grad_carry, z, h_prev, h_candidate, mix, grad_pre_z, grad_pre_h, grad_h_prev))
HALOGEN_OP(void, gru_gates_backward, grad_pre_r.device,
           (Matrix<const float> grad_hr, Matrix<const float> r, Matrix<const float> h_prev, Matrix<float> grad_pre_r,
            Matrix<float> grad_h_prev),
           (grad_hr, r, h_prev, grad_pre_r, grad_h_prev))
HALOGEN_OP(void, lstm_cell, c.device,
           (Matrix<const float> pre, Matrix<const float> c_prev, Matrix<float> gates, Matrix<float> c,
            Matrix<float> h),
           (pre, c_prev, gates, c, h))
HALOGEN_OP(void, lstm_cell_backward, grad_pre.device,
           (Matrix<const float> grad_h, Matrix<const float> grad_c, Matrix<const float> gates,
            Matrix<const float> c_prev, Matrix<const float> c, Matrix<float> grad_pre, Matrix<float> grad_c_prev),
           (grad_h, grad_c, gates, c_prev, c, grad_pre, grad_c_prev))
HALOGEN_OP(void, pair_dot, x.device,
           (Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<float> scores),
           (x, a, b, scores))
HALOGEN_OP(void, pair_dot_backward, grad_x.device,
           (Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<const float> grad_scores,
            Matrix<float> grad_x),
           (x, a, b, grad_scores, grad_x))
HALOGEN_OP(double, bce_with_logits, scores.device,
           (Span<const float> scores, Span<const uint8_t> labels, float scale, Span<float> grad_scores),
           (scores, labels, scale, grad_scores))

// ---- GAT: edge scores (SDDMM), edge softmax, attention dropout, per-head weighted SpMM -----------------------
HALOGEN_OP(void, head_scores, s.device, (Matrix<const float> h, Matrix<const float> att, Matrix<float> s),
           (h, att, s))
HALOGEN_OP(void, head_scores_backward, grad_h.device,
           (Matrix<const float> h, Matrix<const float> att, Matrix<const float> grad_s, Matrix<float> grad_h,
            Matrix<float> grad_att),
           (h, att, grad_s, grad_h, grad_att))
HALOGEN_OP(void, gat_edge_scores, scores.device,
           (const CsrView& a, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
            Matrix<float> scores),
           (a, s_dst, s_src, slope, scores))
HALOGEN_OP(void, gat_edge_scores_backward, grad_scores.device,
           (const CsrView& a, const CsrView& a_t, Span<const int32_t> a_t_edge, Matrix<const float> s_dst,
            Matrix<const float> s_src, float slope, Matrix<float> grad_scores, Matrix<float> grad_s_dst,
            Matrix<float> grad_s_src),
           (a, a_t, a_t_edge, s_dst, s_src, slope, grad_scores, grad_s_dst, grad_s_src))
HALOGEN_OP(void, edge_softmax, scores.device, (const CsrView& a, Matrix<float> scores), (a, scores))
HALOGEN_OP(void, edge_softmax_backward, grad.device,
           (const CsrView& a, Matrix<const float> alpha, Matrix<float> grad), (a, alpha, grad))
HALOGEN_OP(void, edge_dropout, out.device,
           (const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
            const EpilogueParams& params, Matrix<const float> in, Matrix<float> out),
           (a, row_gid, col_gid, params, in, out))
HALOGEN_OP(void, weighted_spmm, out.device,
           (const CsrView& a, Matrix<const float> weights, Matrix<const float> x, Matrix<float> out),
           (a, weights, x, out))
HALOGEN_OP(void, weighted_spmm_transpose, out.device,
           (const CsrView& a_t, Span<const int32_t> a_t_edge, Matrix<const float> weights, Matrix<const float> g,
            Matrix<float> out),
           (a_t, a_t_edge, weights, g, out))
HALOGEN_OP(void, edge_dot, out.device,
           (const CsrView& a, Matrix<const float> g, Matrix<const float> x, Matrix<float> out), (a, g, x, out))
HALOGEN_OP(void, gat_attention, out.device,
           (const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
            const EpilogueParams& params, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
            Matrix<const float> x, Matrix<float> out, Matrix<float> stats),
           (a, row_gid, col_gid, params, s_dst, s_src, slope, x, out, stats))
HALOGEN_OP(void, gat_attention_backward, grad_x.device,
           (const CsrView& a, const CsrView& a_t, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
            const EpilogueParams& params, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
            Matrix<const float> x, Matrix<const float> stats, Matrix<const float> g, Matrix<float> row_dot,
            Matrix<float> grad_x, Matrix<float> grad_s_dst, Matrix<float> grad_s_src),
           (a, a_t, row_gid, col_gid, params, s_dst, s_src, slope, x, stats, g, row_dot, grad_x, grad_s_dst,
            grad_s_src))
HALOGEN_OP(void, elu_dropout, h.device,
           (Matrix<float> h, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> mask),
           (h, row_gid, params, mask))
