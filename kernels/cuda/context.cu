#include "kernels/cuda/context.h"

#include "kernels/cuda/device_util.cuh"

#include <map>

namespace halogen::kernels::cuda {

ThreadContext& thread_context() {
  // One map per thread, keyed by device; heap-allocated and never freed (see context.h).
  thread_local std::map<int, ThreadContext>* contexts = new std::map<int, ThreadContext>();
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  ThreadContext& context = (*contexts)[device];
  if (context.device < 0) {
    CUBLAS_CHECK(cublasCreate(&context.cublas));
    // Explicitly FP32 (gemm.cu switches to TF32 only when asked): never rely on the library's default.
    CUBLAS_CHECK(cublasSetMathMode(context.cublas, CUBLAS_DEFAULT_MATH));
    context.cublas_tf32 = false;
    CUSPARSE_CHECK(cusparseCreate(&context.cusparse));
    CUDA_CHECK(cudaMalloc(&context.scratch_double, 2 * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&context.scratch_count, 2 * sizeof(unsigned long long)));
    CUDA_CHECK(cudaMalloc(&context.sum_partials, kMaxSumBlocks * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&context.async_sum_partials, kMaxSumBlocks * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&context.bias_partials, kBiasPartialFloats * sizeof(float)));
    context.device = device;
  }
  return context;
}

}  // namespace halogen::kernels::cuda
