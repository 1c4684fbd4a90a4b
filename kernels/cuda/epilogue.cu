// Row-wise epilogues on the GPU: bias, fused bias/ReLU/dropout, dropout, mask application, bias gradient.
// Each element does exactly the float operations of kernels/cpu/epilogue.cpp in the same order, and dropout
// draws from the same counter-based RNG (core/rng.h), so outputs and masks match the CPU bit for bit.
#include <algorithm>

#include "core/rng.h"
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void add_bias_kernel(float* out, int64_t rows, int64_t cols, int64_t stride,  // out: (rows, cols)
                                const float* bias) {                                     // bias: (cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    out[r * stride + c] += bias[c];
  }
}

// The dropout factor of element (row with global id gid, column c) of a matrix `width` wide (as on the CPU:
// rng::dropout_keep; `threshold` is rng::dropout_threshold(p)). One Philox call per element: a thread uses one
// of the call's four words, the CPU all four.
__device__ __forceinline__ float dropout_factor(uint64_t seed, uint64_t rng_stream, uint32_t threshold, int64_t gid,
                                                int64_t width, int64_t c, float keep_scale) {
  const uint64_t index = static_cast<uint64_t>(gid) * static_cast<uint64_t>(width) + static_cast<uint64_t>(c);
  return rng::dropout_keep(seed, rng_stream, index, threshold) ? keep_scale : 0.0f;
}

__global__ void bias_relu_dropout_kernel(float* h, int64_t rows, int64_t cols, int64_t h_stride,  // h: (rows, cols)
                                         const float* bias,                                       // (cols) or null
                                         const int64_t* row_gid,                                  // (rows) or null
                                         bool relu, uint32_t threshold, uint64_t seed, uint64_t rng_stream,
                                         float keep_scale,
                                         float* mask, int64_t mask_stride) {  // mask: (rows, cols) or null
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    float* element = h + r * h_stride + c;
    const float pre = bias ? *element + bias[c] : *element;
    const float factor =
        row_gid ? dropout_factor(seed, rng_stream, threshold, row_gid[r], cols, c, keep_scale) : 1.0f;
    if (relu && !(pre > 0.0f)) {
      *element = pre != pre ? pre : 0.0f;  // NaN stays NaN so that the caller's NaN check sees it
      if (mask) mask[r * mask_stride + c] = 0.0f;
    } else {
      *element = pre * factor;
      if (mask) mask[r * mask_stride + c] = factor;
    }
  }
}

__global__ void dropout_kernel(const float* x, int64_t rows, int64_t cols, int64_t x_stride,  // x: (rows, cols)
                               const int64_t* row_gid,                                        // (rows) or null
                               uint32_t threshold, uint64_t seed, uint64_t rng_stream, float keep_scale,
                               float* out, int64_t out_stride,     // out: (rows, cols), may alias x
                               float* mask, int64_t mask_stride) {  // mask: (rows, cols) or null
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    const float factor =
        row_gid ? dropout_factor(seed, rng_stream, threshold, row_gid[r], cols, c, keep_scale) : 1.0f;
    out[r * out_stride + c] = x[r * x_stride + c] * factor;
    if (mask) mask[r * mask_stride + c] = factor;
  }
}

__global__ void dropout_bf16_kernel(const uint16_t* x, int64_t rows, int64_t cols, int64_t x_stride,  // x: BF16
                                    const int64_t* row_gid,                                           // or null
                                    uint32_t threshold, uint64_t seed, uint64_t rng_stream, float keep_scale,
                                    float* out, int64_t out_stride) {  // out: (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    const float factor =
        row_gid ? dropout_factor(seed, rng_stream, threshold, row_gid[r], cols, c, keep_scale) : 1.0f;
    out[r * out_stride + c] = __fmul_rn(__uint_as_float(static_cast<uint32_t>(x[r * x_stride + c]) << 16), factor);
  }
}

// dropout_bf16_kernel's product, times the row's scale (or 1), rounded as bf16.cu's round_bits (the CPU's
// formula, core/bf16.h).
__global__ void dropout_scale_round_bf16_kernel(const uint16_t* x, int64_t rows, int64_t cols,
                                                int64_t x_stride,         // x: BF16
                                                const int64_t* row_gid,   // or null
                                                uint32_t threshold, uint64_t seed, uint64_t rng_stream,
                                                float keep_scale, const float* scale,  // scale: (rows) or null
                                                uint16_t* out, int64_t out_stride) {   // out: BF16 (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    const float factor =
        row_gid ? dropout_factor(seed, rng_stream, threshold, row_gid[r], cols, c, keep_scale) : 1.0f;
    const float value = __uint_as_float(static_cast<uint32_t>(x[r * x_stride + c]) << 16);
    const uint32_t u = __float_as_uint(__fmul_rn(__fmul_rn(value, factor), scale ? scale[r] : 1.0f));
    out[r * out_stride + c] = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x0040u)
                                                              : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}

__global__ void apply_mask_kernel(float* grad, int64_t rows, int64_t cols, int64_t grad_stride,  // (rows, cols)
                                  const float* mask, int64_t mask_stride) {                      // (rows, cols)
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    grad[r * grad_stride + c] *= mask[r * mask_stride + c];
  }
}

__global__ void relu_dropout_backward_kernel(float* grad, int64_t rows, int64_t cols, int64_t grad_stride,
                                             const float* out, int64_t out_stride, float keep_scale) {
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    grad[r * grad_stride + c] *= out[r * out_stride + c] > 0.0f ? keep_scale : 0.0f;
  }
}

// grad_bias[c] += sum over rows of grad_out[r, c], in two passes with a fixed order (no float atomics: bitwise
// repeatable). Pass 1, grid (column tiles, chunks), block (32, 8): block (t, k) sums the rows of chunk k,
// [rows k / K, rows (k+1) / K), for the 32 columns of tile t; its 8 y-threads stride the chunk's rows and are
// added in y order in shared memory. With one chunk it adds into grad_bias itself; otherwise it writes
// partials[k, c] and pass 2 adds the K partials of each column in chunk order. K depends only on the shape.
constexpr int kBiasTile = 32, kBiasRowsPerBlock = 8, kBiasMaxChunks = 64;
__global__ void bias_backward_kernel(const float* grad_out, int64_t rows, int64_t cols, int64_t stride,
                                     float* grad_bias,    // (cols), when gridDim.y == 1
                                     float* partials) {   // (gridDim.y, cols), when gridDim.y > 1
  __shared__ float partial[kBiasRowsPerBlock][kBiasTile];
  const int64_t c = int64_t(blockIdx.x) * kBiasTile + threadIdx.x;
  const int64_t first = rows * blockIdx.y / gridDim.y, last = rows * (blockIdx.y + 1) / gridDim.y;
  float sum = 0.0f;
  if (c < cols) {
    for (int64_t r = first + threadIdx.y; r < last; r += kBiasRowsPerBlock) sum += grad_out[r * stride + c];
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int y = 1; y < kBiasRowsPerBlock; ++y) sum += partial[y][threadIdx.x];
    if (gridDim.y == 1) grad_bias[c] += sum;
    else partials[int64_t(blockIdx.y) * cols + c] = sum;
  }
}

__global__ void bias_partials_sum_kernel(const float* partials, int chunks, int64_t cols,  // partials: (chunks, cols)
                                         float* grad_bias) {                                  // (cols)
  for (int64_t c = grid_first(); c < cols; c += grid_step()) {
    float sum = 0.0f;
    for (int k = 0; k < chunks; ++k) sum += partials[k * cols + c];
    grad_bias[c] += sum;
  }
}

void check_dropout(const EpilogueParams& params, Span<const int64_t> row_gid, int64_t rows) {
  HALOGEN_ASSERT(params.dropout >= 0.0f && params.dropout < 1.0f, "dropout probability %g is not in [0, 1)",
                 static_cast<double>(params.dropout));
  detail::require_device(row_gid, "dropout row_gid");
  HALOGEN_ASSERT(params.dropout == 0.0f || row_gid.size == rows, "row_gid has %lld entries for %lld rows",
                 (long long)row_gid.size, (long long)rows);
}

}  // namespace

void add_bias(Matrix<float> out, Span<const float> bias, Stream stream) {
  detail::require_device(out, "add_bias out");
  detail::require_device(bias, "add_bias bias");
  HALOGEN_ASSERT(bias.size == out.cols, "bias has %lld entries, out has %lld columns", (long long)bias.size,
                 (long long)out.cols);
  if (out.size() == 0) return;
  add_bias_kernel<<<grid_for(out.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      out.data, out.rows, out.cols, detail::row_stride(out), bias.data);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void bias_backward(Matrix<const float> grad_out, Span<float> grad_bias, Stream stream) {
  detail::require_device(grad_out, "bias_backward grad_out");
  detail::require_device(grad_bias, "bias_backward grad_bias");
  HALOGEN_ASSERT(grad_bias.size == grad_out.cols, "grad_bias has %lld entries, grad_out has %lld columns",
                 (long long)grad_bias.size, (long long)grad_out.cols);
  if (grad_out.size() == 0) return;
  // Chunks of at least 256 rows, at most kBiasMaxChunks, and no more than the context's partials hold.
  const int64_t cols = grad_out.cols;
  int64_t chunks = (grad_out.rows + 255) / 256;
  chunks = std::min<int64_t>(std::min<int64_t>(chunks, kBiasMaxChunks), kBiasPartialFloats / cols);
  chunks = std::max<int64_t>(chunks, 1);
  float* partials = thread_context().bias_partials;
  const dim3 grid(static_cast<unsigned>((cols + kBiasTile - 1) / kBiasTile), static_cast<unsigned>(chunks));
  const dim3 block(kBiasTile, kBiasRowsPerBlock);
  bias_backward_kernel<<<grid, block, 0, to_cuda(stream)>>>(grad_out.data, grad_out.rows, cols,
                                                            detail::row_stride(grad_out), grad_bias.data, partials);
  HALOGEN_CUDA_CHECK_LAUNCH();
  if (chunks > 1) {
    bias_partials_sum_kernel<<<grid_for(cols, kThreads), kThreads, 0, to_cuda(stream)>>>(
        partials, static_cast<int>(chunks), cols, grad_bias.data);
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
}

void bias_relu_dropout(Matrix<float> h, Span<const float> bias, Span<const int64_t> row_gid,
                       const EpilogueParams& params, Matrix<float> mask, Stream stream) {
  detail::require_device(h, "bias_relu_dropout h");
  detail::require_device(bias, "bias_relu_dropout bias");
  detail::require_device(mask, "bias_relu_dropout mask");
  HALOGEN_ASSERT(bias.size == 0 || bias.size == h.cols, "bias has %lld entries, h has %lld columns",
                 (long long)bias.size, (long long)h.cols);
  const bool record = mask.rows != 0;
  if (record) detail::require_same_shape(h, mask, "h", "mask");
  check_dropout(params, row_gid, h.rows);
  if (h.size() == 0) return;
  const bool drop = params.dropout > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - params.dropout) : 1.0f;
  bias_relu_dropout_kernel<<<grid_for(h.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      h.data, h.rows, h.cols, detail::row_stride(h), bias.size ? bias.data : nullptr, drop ? row_gid.data : nullptr,
      params.relu, rng::dropout_threshold(params.dropout), params.seed, params.rng_stream, keep_scale,
      record ? mask.data : nullptr, record ? detail::row_stride(mask) : 0);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void dropout(Matrix<const float> x, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> out,
             Matrix<float> mask, Stream stream) {
  detail::require_device(x, "dropout x");
  detail::require_device(out, "dropout out");
  detail::require_device(mask, "dropout mask");
  detail::require_same_shape(x, out, "x", "out");
  const bool record = mask.rows != 0;
  if (record) detail::require_same_shape(x, mask, "x", "mask");
  check_dropout(params, row_gid, x.rows);
  if (x.size() == 0) return;
  const bool drop = params.dropout > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - params.dropout) : 1.0f;
  dropout_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      x.data, x.rows, x.cols, detail::row_stride(x), drop ? row_gid.data : nullptr,
      rng::dropout_threshold(params.dropout), params.seed, params.rng_stream, keep_scale, out.data,
      detail::row_stride(out), record ? mask.data : nullptr, record ? detail::row_stride(mask) : 0);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void dropout_bf16(Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params,
                  Matrix<float> out, Stream stream) {
  detail::require_device(x, "dropout_bf16 x");
  detail::require_device(out, "dropout_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  check_dropout(params, row_gid, x.rows);
  if (x.size() == 0) return;
  const bool drop = params.dropout > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - params.dropout) : 1.0f;
  dropout_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      reinterpret_cast<const uint16_t*>(x.data), x.rows, x.cols, detail::row_stride(x), drop ? row_gid.data : nullptr,
      rng::dropout_threshold(params.dropout), params.seed, params.rng_stream, keep_scale, out.data,
      detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void dropout_scale_round_bf16(Matrix<const Bf16> x, Span<const int64_t> row_gid, const EpilogueParams& params,
                              Span<const float> scale, Matrix<Bf16> out, Stream stream) {
  detail::require_device(x, "dropout_scale_round_bf16 x");
  detail::require_device(out, "dropout_scale_round_bf16 out");
  detail::require_same_shape(x, out, "x", "out");
  check_dropout(params, row_gid, x.rows);
  if (scale.size > 0) detail::require_device(scale, "dropout_scale_round_bf16 scale");
  HALOGEN_ASSERT(scale.size == 0 || scale.size == x.rows, "dropout_scale_round_bf16: %lld scales for %lld rows",
                 (long long)scale.size, (long long)x.rows);
  if (x.size() == 0) return;
  const bool drop = params.dropout > 0.0f;
  const float keep_scale = drop ? 1.0f / (1.0f - params.dropout) : 1.0f;
  dropout_scale_round_bf16_kernel<<<grid_for(x.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      reinterpret_cast<const uint16_t*>(x.data), x.rows, x.cols, detail::row_stride(x), drop ? row_gid.data : nullptr,
      rng::dropout_threshold(params.dropout), params.seed, params.rng_stream, keep_scale,
      scale.size > 0 ? scale.data : nullptr, reinterpret_cast<uint16_t*>(out.data), detail::row_stride(out));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void apply_mask(Matrix<float> grad, Matrix<const float> mask, Stream stream) {
  detail::require_device(grad, "apply_mask grad");
  detail::require_device(mask, "apply_mask mask");
  detail::require_same_shape(grad, mask, "grad", "mask");
  if (grad.size() == 0) return;
  apply_mask_kernel<<<grid_for(grad.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      grad.data, grad.rows, grad.cols, detail::row_stride(grad), mask.data, detail::row_stride(mask));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void relu_dropout_backward(Matrix<float> grad, Matrix<const float> out, float dropout, Span<float> grad_bias,
                           Stream stream) {
  detail::require_device(grad, "relu_dropout_backward grad");
  detail::require_device(out, "relu_dropout_backward out");
  detail::require_device(grad_bias, "relu_dropout_backward grad_bias");
  detail::require_same_shape(grad, out, "grad", "out");
  HALOGEN_ASSERT(dropout >= 0.0f && dropout < 1.0f, "dropout probability %g is not in [0, 1)",
                 static_cast<double>(dropout));
  HALOGEN_ASSERT(grad_bias.size == 0 || grad_bias.size == grad.cols,
                 "grad_bias has %lld entries, grad has %lld columns", (long long)grad_bias.size, (long long)grad.cols);
  if (grad.size() == 0) return;
  const float keep_scale = dropout > 0.0f ? 1.0f / (1.0f - dropout) : 1.0f;
  relu_dropout_backward_kernel<<<grid_for(grad.size(), kThreads), kThreads, 0, to_cuda(stream)>>>(
      grad.data, grad.rows, grad.cols, detail::row_stride(grad), out.data, detail::row_stride(out), keep_scale);
  HALOGEN_CUDA_CHECK_LAUNCH();
  // The column sums as bias_backward makes them (a second pass: on the GPU the sums are atomics anyway).
  if (grad_bias.size != 0) bias_backward(grad, grad_bias, stream);
}

}  // namespace halogen::kernels::cuda
