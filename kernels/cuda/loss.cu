// Masked softmax cross-entropy and accuracy counting on the GPU: one warp per listed row. The per-row
// arithmetic follows kernels/cpu/loss.cpp (max in float, exp/log/sums in double); only the order of the
// additions differs (a warp tree instead of a serial loop).
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256, kWarpsPerBlock = kThreads / 32;

// For each listed row (one warp each): loss += -log softmax(row)[label], grad row = (softmax - onehot) * scale.
// counts[1] += number of listed rows whose row id or label is out of range (checked by the host afterwards).
__global__ void softmax_cross_entropy_kernel(const float* logits, int64_t logit_rows, int64_t classes,
                                             int64_t logit_stride,          // logits: (logit_rows, classes)
                                             const int32_t* labels,         // (logit_rows)
                                             const int64_t* rows, int64_t count,  // rows: (count)
                                             float scale, float* grad, int64_t grad_stride,  // grad: like logits
                                             double* partials, unsigned long long* counts) {
  const int lane = threadIdx.x % 32;
  double loss = 0.0;
  for (int64_t i = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; i < count;
       i += int64_t(gridDim.x) * kWarpsPerBlock) {
    const int64_t r = rows[i];
    const int32_t label = (r >= 0 && r < logit_rows) ? labels[r] : -1;
    if (label < 0 || label >= classes) {
      if (lane == 0) atomicAdd(counts + 1, 1ull);
      continue;
    }
    const float* row = logits + r * logit_stride;
    float max_logit = row[0];
    for (int64_t c = lane; c < classes; c += 32) max_logit = fmaxf(max_logit, row[c]);
    max_logit = warp_max(max_logit);
    double sum_exp = 0.0;
    for (int64_t c = lane; c < classes; c += 32) sum_exp += exp(static_cast<double>(row[c] - max_logit));
    sum_exp = warp_sum(sum_exp);
    const double inv_sum = 1.0 / sum_exp;
    float* grad_row = grad + r * grad_stride;
    for (int64_t c = lane; c < classes; c += 32) {
      const double softmax = exp(static_cast<double>(row[c] - max_logit)) * inv_sum;
      grad_row[c] = static_cast<float>((softmax - (c == label ? 1.0 : 0.0)) * scale);
    }
    if (lane == 0) loss += log(sum_exp) - static_cast<double>(row[label] - max_logit);
  }
  loss = block_sum(loss);
  if (threadIdx.x == 0) partials[blockIdx.x] = loss;  // summed in a fixed order by finish_sum
}

// counts[0] += rows whose argmax (ties -> lowest index) equals the label; counts[1] += rows out of range.
__global__ void count_correct_kernel(const float* logits, int64_t logit_rows, int64_t classes,
                                     int64_t logit_stride,                 // logits: (logit_rows, classes)
                                     const int32_t* labels,                // (logit_rows)
                                     const int64_t* rows, int64_t count,   // (count)
                                     unsigned long long* counts) {
  const int lane = threadIdx.x % 32;
  unsigned long long correct = 0;
  for (int64_t i = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; i < count;
       i += int64_t(gridDim.x) * kWarpsPerBlock) {
    const int64_t r = rows[i];
    if (r < 0 || r >= logit_rows) {
      if (lane == 0) atomicAdd(counts + 1, 1ull);
      continue;
    }
    const float* row = logits + r * logit_stride;
    // Each lane scans its columns in increasing order with a strict comparison (keeps its lowest index).
    float best_value = -INFINITY;
    int64_t best = classes;  // "none" sorts after every real column
    for (int64_t c = lane; c < classes; c += 32) {
      if (best == classes || row[c] > best_value) {
        best_value = row[c];
        best = c;
      }
    }
    // Warp argmax: the larger value wins; equal values -> the lower column index.
    for (int offset = 16; offset > 0; offset >>= 1) {
      const float other_value = __shfl_xor_sync(0xffffffffu, best_value, offset);
      const int64_t other = __shfl_xor_sync(0xffffffffu, best, offset);
      if (other != classes && (best == classes || other_value > best_value ||
                               (other_value == best_value && other < best))) {
        best_value = other_value;
        best = other;
      }
    }
    if (lane == 0 && best < classes && best == labels[r]) ++correct;
  }
  correct = block_sum(correct);
  if (threadIdx.x == 0 && correct) atomicAdd(counts, correct);
}

void check_loss_inputs(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows) {
  detail::require_device(logits, "logits");
  detail::require_device(labels, "labels");
  detail::require_device(rows, "rows");
  HALOGEN_ASSERT(labels.size == logits.rows, "labels has %lld entries, logits has %lld rows",
                 (long long)labels.size, (long long)logits.rows);
}

unsigned blocks_for_rows(int64_t count) {
  const int64_t blocks = (count + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxSumBlocks ? kMaxSumBlocks : blocks));
}

}  // namespace

double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream stream) {
  check_loss_inputs(logits, labels, rows);
  detail::require_device(grad_logits, "grad_logits");
  detail::require_same_shape(logits, grad_logits, "logits", "grad_logits");
  const int64_t classes = logits.cols;
  HALOGEN_ASSERT(classes > 0 || rows.size == 0, "softmax over 0 classes");
  const cudaStream_t cuda_stream = to_cuda(stream);
  // "=" semantics: zero everywhere, then the listed rows.
  if (grad_logits.size() > 0) {
    CUDA_CHECK(cudaMemset2DAsync(grad_logits.data, detail::row_stride(grad_logits) * sizeof(float), 0,
                                 classes * sizeof(float), grad_logits.rows, cuda_stream));
  }
  if (rows.size == 0) return 0.0;
  ThreadContext& context = thread_context();
  CUDA_CHECK(cudaMemsetAsync(context.scratch_count, 0, 2 * sizeof(unsigned long long), cuda_stream));
  softmax_cross_entropy_kernel<<<blocks_for_rows(rows.size), kThreads, 0, cuda_stream>>>(
      logits.data, logits.rows, classes, detail::row_stride(logits), labels.data, rows.data, rows.size, scale,
      grad_logits.data, detail::row_stride(grad_logits), context.sum_partials, context.scratch_count);
  HALOGEN_CUDA_CHECK_LAUNCH();
  finish_sum(context.sum_partials, blocks_for_rows(rows.size), context.scratch_double, false, cuda_stream);
  HALOGEN_CUDA_CHECK_LAUNCH();
  double loss = 0.0;
  unsigned long long counts[2] = {0, 0};
  CUDA_CHECK(cudaMemcpyAsync(&loss, context.scratch_double, sizeof(double), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaMemcpyAsync(counts, context.scratch_count, sizeof(counts), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  HALOGEN_ASSERT(counts[1] == 0, "%llu listed rows have a row id outside [0, %lld) or a label outside [0, %lld)",
                 counts[1], (long long)logits.rows, (long long)classes);
  return loss;
}

int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream stream) {
  check_loss_inputs(logits, labels, rows);
  if (rows.size == 0 || logits.cols == 0) return 0;
  const cudaStream_t cuda_stream = to_cuda(stream);
  ThreadContext& context = thread_context();
  CUDA_CHECK(cudaMemsetAsync(context.scratch_count, 0, 2 * sizeof(unsigned long long), cuda_stream));
  count_correct_kernel<<<blocks_for_rows(rows.size), kThreads, 0, cuda_stream>>>(
      logits.data, logits.rows, logits.cols, detail::row_stride(logits), labels.data, rows.data, rows.size,
      context.scratch_count);
  HALOGEN_CUDA_CHECK_LAUNCH();
  unsigned long long counts[2] = {0, 0};
  CUDA_CHECK(cudaMemcpyAsync(counts, context.scratch_count, sizeof(counts), cudaMemcpyDeviceToHost, cuda_stream));
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  HALOGEN_ASSERT(counts[1] == 0, "%llu listed rows are outside logits' %lld rows", counts[1],
                 (long long)logits.rows);
  return static_cast<int64_t>(counts[0]);
}

}  // namespace halogen::kernels::cuda
