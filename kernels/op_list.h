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
HALOGEN_OP(void, apply_mask, grad.device, (Matrix<float> grad, Matrix<const float> mask), (grad, mask))

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
HALOGEN_OP(void, scatter_add_rows, out.device, (Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out),
           (x, idx, out))

// ---- elementwise helpers -------------------------------------------------------------------------------------
HALOGEN_OP(void, fill, x.device, (Span<float> x, float value), (x, value))
HALOGEN_OP(void, axpy, y.device, (float alpha, Span<const float> x, Span<float> y), (alpha, x, y))
HALOGEN_OP(double, sum_squares, x.device, (Span<const float> x), (x))

// ---- temporal tasks ------------------------------------------------------------------------------------------
HALOGEN_OP(double, squared_error, y.device,
           (Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y),
           (y, target, grad_scale, grad_y))
