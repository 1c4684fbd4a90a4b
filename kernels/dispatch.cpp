// kernels::<op> -> kernels::cpu::<op> for host views, or the CUDA backend's <op> (kernels/backend.h, loaded on
// first use) for device views, chosen by the op's dispatch device (kernels/op_list.h). The chosen backend
// asserts that every other view lives on the same device. A device view without a loadable backend is a
// UserError (it cannot normally exist: device memory comes from kernels::device::initialise_device).
#include "core/check.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "kernels/ops.h"

namespace halogen::kernels {

// One tag type per op, so that the ops whose work is counted (work_count) have an overload of count_work below.
namespace op {
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) struct name {};
#include "kernels/op_list.h"
#undef HALOGEN_OP
}  // namespace op

namespace {

thread_local WorkCount t_work;

template <typename Op, typename... Arguments>
void count_work(Op, const Arguments&...) {}  // ops that count nothing

// Row pointers, column ids and the gathered dense rows of a sparse product over `width` columns.
// `element_bytes`: of one gathered element (4 for FP32, 2 for BF16).
void count_sparse(const CsrView& a, int64_t width, double per_nonzero_bytes, double output_bytes,
                  double element_bytes = 4.0) {
  const double nnz = static_cast<double>(a.nnz);
  t_work.bytes += 8.0 * static_cast<double>(a.rows + 1) + (4.0 + per_nonzero_bytes + element_bytes * width) * nnz +
                  output_bytes;
  t_work.flops += 2.0 * nnz * static_cast<double>(width);
}

void count_work(op::spmm, const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate) {
  const double factors = 4.0 * static_cast<double>((a.row_scale ? a.rows : 0) + (a.col_scale ? a.cols : 0));
  count_sparse(a, x.cols, a.values ? 4.0 : 0.0,
               (accumulate ? 8.0 : 4.0) * static_cast<double>(out.rows * out.cols) + factors);
}
void count_work(op::spmm_bf16, const CsrView& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate) {
  const double factors = 4.0 * static_cast<double>((a.row_scale ? a.rows : 0) + (a.col_scale ? a.cols : 0));
  count_sparse(a, x.cols, a.values ? 4.0 : 0.0, (accumulate ? 8.0 : 4.0) * static_cast<double>(out.rows * out.cols) + factors,
               2.0);
}
void count_work(op::weighted_spmm, const CsrView& a, Matrix<const float> weights, Matrix<const float> x,
                Matrix<float> out) {
  count_sparse(a, x.cols, 4.0 * static_cast<double>(weights.cols), 4.0 * static_cast<double>(out.rows * out.cols));
}
void count_work(op::weighted_spmm_transpose, const CsrView& a_t, Span<const int32_t>, Matrix<const float> weights,
                Matrix<const float> g, Matrix<float> out) {
  count_sparse(a_t, g.cols, 4.0 + 4.0 * static_cast<double>(weights.cols),
               4.0 * static_cast<double>(out.rows * out.cols));
}
void count_work(op::edge_dot, const CsrView& a, Matrix<const float> g, Matrix<const float> x, Matrix<float> out) {
  count_sparse(a, x.cols, 4.0 * static_cast<double>(out.cols), 4.0 * static_cast<double>(g.rows * g.cols));
}
// The fused GAT ops: a weighted SpMM's traffic with the source scores (K floats) gathered beside each row, and
// the row statistics written (forward); the backward gathers a row of x per edge by destination (pass 1) and a
// row of g with the destination's K scores, 2K statistics and K row sums per edge by source (pass 2), 6 flops
// per nonzero and column (two dots and an axpy).
void count_work(op::gat_attention, const CsrView& a, Span<const int64_t>, Span<const int64_t>,
                const EpilogueParams&, Matrix<const float> s_dst, Matrix<const float>, float, Matrix<const float> x,
                Matrix<float> out, Matrix<float> stats) {
  count_sparse(a, x.cols, 4.0 * static_cast<double>(s_dst.cols),
               4.0 * static_cast<double>(out.rows * out.cols + stats.rows * stats.cols + s_dst.rows * s_dst.cols));
}
void count_work(op::gat_attention_backward, const CsrView& a, const CsrView& a_t, Span<const int64_t>,
                Span<const int64_t>, const EpilogueParams&, Matrix<const float> s_dst, Matrix<const float>, float,
                Matrix<const float> x, Matrix<const float>, Matrix<const float> g, Matrix<float>,
                Matrix<float> grad_x, Matrix<float>, Matrix<float>) {
  const double heads = static_cast<double>(s_dst.cols);
  count_sparse(a, x.cols, 4.0 * heads, 4.0 * static_cast<double>(g.rows * g.cols) + 16.0 * heads * a.rows);
  count_sparse(a_t, g.cols, 16.0 * heads, 4.0 * static_cast<double>(grad_x.rows * (grad_x.cols + s_dst.cols)));
  t_work.flops += 2.0 * static_cast<double>(a.nnz) * static_cast<double>(x.cols);  // pass 2's second product
}
void count_work(op::gemm, Matrix<const float> a, bool transpose_a, Matrix<const float>, bool, Matrix<float> c,
                float, float beta) {
  const double m = static_cast<double>(c.rows), n = static_cast<double>(c.cols),
               k = static_cast<double>(transpose_a ? a.rows : a.cols);
  t_work.flops += 2.0 * m * n * k;
  t_work.bytes += 4.0 * (m * k + k * n + (beta != 0.0f ? 2.0 : 1.0) * m * n);
}
void count_work(op::gemm_bf16, Matrix<const Bf16> a, bool transpose_a, Matrix<const Bf16>, bool, Matrix<float> c,
                float, float beta) {
  const double m = static_cast<double>(c.rows), n = static_cast<double>(c.cols),
               k = static_cast<double>(transpose_a ? a.rows : a.cols);
  t_work.flops += 2.0 * m * n * k;
  t_work.bytes += 2.0 * (m * k + k * n) + 4.0 * (beta != 0.0f ? 2.0 : 1.0) * m * n;
}

}  // namespace

const WorkCount& work_count() { return t_work; }

#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments)                         \
  return_type name(HALOGEN_UNPAREN parameters, Stream stream) {                                       \
    count_work(op::name{}, HALOGEN_UNPAREN arguments);                                                \
    if ((dispatch_device) == Device::cuda) return cuda_backend().name(HALOGEN_UNPAREN arguments, stream); \
    return cpu::name(HALOGEN_UNPAREN arguments, stream);                                              \
  }
#include "kernels/op_list.h"
#undef HALOGEN_OP

namespace {
thread_local detail::ProgressState t_progress;
}  // namespace

ProgressHook::ProgressHook(ProgressFn fn, void* context) {
  HALOGEN_ASSERT(t_progress.fn == nullptr, "progress hooks do not nest");
  t_progress = {fn, context};
}
ProgressHook::~ProgressHook() { t_progress = {}; }
const detail::ProgressState& detail::progress_state() { return t_progress; }

void release_sparse_cache() {
  cpu::release_sparse_cache();
  if (const CudaBackend* backend = cuda_backend_if_loaded()) backend->release_sparse_cache();
}


}  // namespace halogen::kernels
