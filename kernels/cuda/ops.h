#pragma once
// CUDA implementations of the ops of kernels/ops.h, with exactly the same names, signatures and contracts
// (see kernels/ops.h for shapes and semantics). kernels/dispatch.cpp routes kernels::<op> here when the views
// live on Device::cuda. Declared without CUDA headers so that host code can include this file.
//
// GPU specifics:
// - Every op is enqueued on `stream` (a cudaStream_t; nullptr = the legacy default stream) and returns
//   without host synchronisation, except softmax_cross_entropy, count_correct, sum_squares, squared_error and
//   bce_with_logits, which return a host scalar and therefore synchronise `stream` once at the end.
// - cuBLAS/cuSPARSE handles exist once per (host thread, device) and are bound to `stream` on each call.
// - spmm caches, per matrix (indptr, indices, values, shape), a device int32 copy of the row pointers
//   (cuSPARSE needs row offsets and column ids of one index type; our CSR has int64 indptr and int32
//   indices). From 2^31 - 2^12 non-zeros it keeps an int64 copy of the column ids instead. Per (matrix, width,
//   strides, accumulate) it caches a sparse descriptor, the dense descriptors and the preprocessed workspace. Both are made on the first call; later calls
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

// The ops of kernels/op_list.h (contracts in kernels/ops.h).
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) \
  return_type name(HALOGEN_UNPAREN parameters, Stream stream = nullptr);
#include "kernels/op_list.h"
#undef HALOGEN_OP
void release_sparse_cache();
// The GEMM math mode (kernels/device.h set_gemm_tf32): false = FP32 (CUBLAS_DEFAULT_MATH), true = TF32 allowed.
void set_gemm_tf32(bool allowed);
bool gemm_tf32();

}  // namespace halogen::kernels::cuda
