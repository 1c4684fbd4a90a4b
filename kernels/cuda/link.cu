// Link scores of row pairs, their backward (row-owned, in pair order: no atomics) and the binary cross-entropy
// with logits.
#include <cmath>

#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256, kWarpsPerBlock = kThreads / 32;

// One warp per pair: the dot product in double (lanes stride the columns), rounded once.
__global__ void pair_dot_kernel(const float* x, int64_t cols, int64_t stride,  // x: (n, cols)
                                const int32_t* a, const int32_t* b, int64_t m,  // a, b: (m)
                                float* scores) {                                // (m)
  const int lane = threadIdx.x % 32;
  for (int64_t k = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; k < m;
       k += int64_t(gridDim.x) * kWarpsPerBlock) {
    const float* xu = x + int64_t(a[k]) * stride;
    const float* xv = x + int64_t(b[k]) * stride;
    double sum = 0.0;
    for (int64_t c = lane; c < cols; c += 32) sum += double(xu[c]) * double(xv[c]);
    sum = warp_sum(sum);
    if (lane == 0) scores[k] = static_cast<float>(sum);
  }
}

// grad_x[a] += g x[b], grad_x[b] += g x[a] for every pair, without atomics, as kernels/cpu/link.cpp does it:
// block k owns the output rows [n k / B, n (k+1) / B) and walks all pairs in order (staged through shared
// memory, kThreads at a time), adding only into its rows, the threads striding the columns. Every row receives
// its terms in pair order (the a-side term of a pair before its b-side term) whatever the grid: bitwise
// repeatable, and the CPU's order and arithmetic (equal to kernels/cpu/link.cpp bit for bit). Each block reads all pair indices (12 bytes a pair, from L2); the f-wide
// updates are done once.
__global__ void pair_dot_backward_kernel(const float* x, int64_t n, int64_t cols, int64_t stride,  // x: (n, cols)
                                         const int32_t* a, const int32_t* b, const float* grad, int64_t m,
                                         float* grad_x, int64_t grad_stride) {           // grad_x: (n, cols)
  __shared__ int32_t source[kThreads], target[kThreads];
  __shared__ float weight[kThreads];
  const int64_t first = n * blockIdx.x / gridDim.x, last = n * (blockIdx.x + 1) / gridDim.x;
  for (int64_t base = 0; base < m; base += kThreads) {
    const int64_t k = base + threadIdx.x;
    if (k < m) {
      source[threadIdx.x] = a[k];
      target[threadIdx.x] = b[k];
      weight[threadIdx.x] = grad[k];
    }
    __syncthreads();
    const int count = static_cast<int>(m - base < kThreads ? m - base : kThreads);
    for (int j = 0; j < count; ++j) {
      const int64_t u = source[j], v = target[j];
      const float g = weight[j];
      // Rounded multiply, then add (no contraction to an FMA): the CPU's arithmetic, so equal bit for bit.
      if (u >= first && u < last)
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
          grad_x[u * grad_stride + c] = __fadd_rn(grad_x[u * grad_stride + c], __fmul_rn(g, x[v * stride + c]));
      if (v >= first && v < last)
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
          grad_x[v * grad_stride + c] = __fadd_rn(grad_x[v * grad_stride + c], __fmul_rn(g, x[u * stride + c]));
    }
    __syncthreads();  // the next chunk overwrites the staged pairs
  }
}

__global__ void bce_with_logits_kernel(const float* scores, const uint8_t* labels, int64_t m, float scale,
                                       float* grad, double* partials) {  // scores, labels, grad: (m)
  double loss = 0.0;
  for (int64_t k = grid_first(); k < m; k += grid_step()) {
    const double s = scores[k], label = labels[k] ? 1.0 : 0.0;
    loss += fmax(s, 0.0) + log1p(exp(-fabs(s))) - label * s;
    grad[k] = static_cast<float>((1.0 / (1.0 + exp(-s)) - label) * scale);
  }
  loss = block_sum(loss);
  if (threadIdx.x == 0) partials[blockIdx.x] = loss;  // summed in a fixed order by finish_sum
}

void require_pairs(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, int64_t m, const char* op) {
  detail::require_device(x, op);
  detail::require_device(a, "pair rows a");
  detail::require_device(b, "pair rows b");
  HALOGEN_ASSERT(a.size == m && b.size == m, "%s: %lld pairs but a has %lld and b %lld entries", op, (long long)m,
                 (long long)a.size, (long long)b.size);
}

unsigned warp_grid(int64_t items) { return grid_for(items, kWarpsPerBlock); }

}  // namespace

void pair_dot(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<float> scores,
              Stream stream) {
  detail::require_device(scores, "pair_dot scores");
  require_pairs(x, a, b, scores.size, "pair_dot x");
  if (scores.size == 0) return;
  pair_dot_kernel<<<warp_grid(scores.size), kThreads, 0, to_cuda(stream)>>>(
      x.data, x.cols, detail::row_stride(x), a.data, b.data, scores.size, scores.data);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void pair_dot_backward(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b,
                       Span<const float> grad_scores, Matrix<float> grad_x, Stream stream) {
  detail::require_device(grad_scores, "pair_dot_backward grad_scores");
  require_pairs(x, a, b, grad_scores.size, "pair_dot_backward x");
  detail::require_device(grad_x, "pair_dot_backward grad_x");
  detail::require_same_shape(grad_x, x, "grad_x", "x");
  if (grad_scores.size == 0 || x.cols == 0) return;
  // Row ranges of at least 64 rows, at most 256 blocks (every block reads all pairs).
  const int64_t ranges = (x.rows + 63) / 64;
  const unsigned blocks = static_cast<unsigned>(ranges < 1 ? 1 : (ranges > 256 ? 256 : ranges));
  pair_dot_backward_kernel<<<blocks, kThreads, 0, to_cuda(stream)>>>(
      x.data, x.rows, x.cols, detail::row_stride(x), a.data, b.data, grad_scores.data, grad_scores.size, grad_x.data,
      detail::row_stride(grad_x));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

double bce_with_logits(Span<const float> scores, Span<const uint8_t> labels, float scale, Span<float> grad_scores,
                       Stream stream) {
  const int64_t m = scores.size;
  HALOGEN_ASSERT(labels.size == m && grad_scores.size == m, "%lld scores, %lld labels, %lld gradients",
                 (long long)m, (long long)labels.size, (long long)grad_scores.size);
  if (m == 0) return 0.0;
  detail::require_device(scores, "bce_with_logits scores");
  detail::require_device(labels, "bce_with_logits labels");
  detail::require_device(grad_scores, "bce_with_logits grad_scores");
  ThreadContext& context = thread_context();
  const cudaStream_t cuda_stream = to_cuda(stream);
  const unsigned blocks = sum_blocks(m, kThreads);
  bce_with_logits_kernel<<<blocks, kThreads, 0, cuda_stream>>>(scores.data, labels.data, m, scale,
                                                               grad_scores.data, context.sum_partials);
  HALOGEN_CUDA_CHECK_LAUNCH();
  finish_sum(context.sum_partials, blocks, context.scratch_double, false, cuda_stream);
  HALOGEN_CUDA_CHECK_LAUNCH();
  double sum = 0.0;
  CUDA_CHECK(cudaMemcpyAsync(&sum, context.scratch_double, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  return sum;
}

}  // namespace halogen::kernels::cuda
