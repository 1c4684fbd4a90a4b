// GAT's ops on the GPU (kernels/ops.h, "GAT"). One thread per output element (row-parallel over the CSR, as on
// the CPU; no atomics), and the same float operations in the same order per element as kernels/cpu/gat.cpp,
// except head_scores_backward's grad_att (one block per column, double sums in the block's order) and
// expf/expm1f (the device's, within a few ulp of the host's). Products summed into an accumulator are __fmul_rn:
// nvcc would otherwise contract a * b + c into one FMA, which rounds once where the CPU build (no FMA) rounds twice.
#include "core/rng.h"
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float leaky(float z, float slope) { return z > 0.0f ? z : slope * z; }

__global__ void head_scores_kernel(const float* h, int64_t h_stride,  // h: (n, K*F)
                                   const float* att, int64_t att_stride,  // att: (K, F)
                                   float* s, int64_t s_stride,            // s: (n, K)
                                   int64_t n, int64_t heads, int64_t width) {
  for (int64_t t = grid_first(); t < n * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads;
    const float* x = h + i * h_stride + k * width;
    const float* a = att + k * att_stride;
    float sum = 0.0f;
    for (int64_t f = 0; f < width; ++f) sum += x[f] * a[f];
    s[i * s_stride + k] = sum;
  }
}

__global__ void head_scores_grad_h_kernel(const float* att, int64_t att_stride,  // att: (K, F)
                                          const float* grad_s, int64_t grad_s_stride,  // grad_s: (n, K)
                                          float* grad_h, int64_t grad_h_stride,        // grad_h: (n, K*F)
                                          int64_t n, int64_t width, int64_t cols) {
  for (int64_t t = grid_first(); t < n * cols; t += grid_step()) {
    const int64_t i = t / cols, c = t % cols, k = c / width;
    grad_h[i * grad_h_stride + c] += __fmul_rn(grad_s[i * grad_s_stride + k], att[k * att_stride + c % width]);
  }
}

// Block c: grad_att[c / F, c % F] += sum_i grad_s[i, c / F] * h[i, c].
__global__ void head_scores_grad_att_kernel(const float* h, int64_t h_stride, const float* grad_s,
                                            int64_t grad_s_stride, float* grad_att, int64_t grad_att_stride,
                                            int64_t n, int64_t width) {
  const int64_t c = blockIdx.x, k = c / width;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += double(grad_s[i * grad_s_stride + k]) * double(h[i * h_stride + c]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) grad_att[k * grad_att_stride + c % width] += float(sum);
}

__global__ void gat_edge_scores_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows,
                                       const float* s_dst, int64_t dst_stride,  // (rows, K)
                                       const float* s_src, int64_t src_stride,  // (cols, K)
                                       float slope, float* scores, int64_t heads) {  // scores: (nnz, K)
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads;
    const float d = s_dst[i * dst_stride + k];
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e)
      scores[e * heads + k] = leaky(d + s_src[int64_t(indices[e]) * src_stride + k], slope);
  }
}

__global__ void leaky_backward_rows_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows,
                                           const float* s_dst, int64_t dst_stride, const float* s_src,
                                           int64_t src_stride, float slope, float* grad_scores, int64_t heads,
                                           float* grad_s_dst, int64_t grad_dst_stride) {
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads;
    const float d = s_dst[i * dst_stride + k];
    float sum = 0.0f;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      float& g = grad_scores[e * heads + k];
      g = d + s_src[int64_t(indices[e]) * src_stride + k] > 0.0f ? g : slope * g;
      sum += g;
    }
    grad_s_dst[i * grad_dst_stride + k] = sum;
  }
}

__global__ void edge_column_sums_kernel(const int64_t* t_indptr, const int32_t* t_edge, int64_t t_rows,
                                        const float* grad_scores, int64_t heads, float* out, int64_t out_stride) {
  for (int64_t t = grid_first(); t < t_rows * heads; t += grid_step()) {
    const int64_t r = t / heads, k = t % heads;
    float sum = 0.0f;
    for (int64_t p = t_indptr[r]; p < t_indptr[r + 1]; ++p) sum += grad_scores[int64_t(t_edge[p]) * heads + k];
    out[r * out_stride + k] = sum;
  }
}

__global__ void edge_softmax_kernel(const int64_t* indptr, int64_t rows, float* scores, int64_t heads) {
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads, begin = indptr[i], end = indptr[i + 1];
    float max = -INFINITY;
    for (int64_t e = begin; e < end; ++e) max = fmaxf(max, scores[e * heads + k]);
    float sum = 0.0f;
    for (int64_t e = begin; e < end; ++e) {
      const float x = expf(scores[e * heads + k] - max);
      scores[e * heads + k] = x;
      sum += x;
    }
    const float inverse = 1.0f / sum;
    for (int64_t e = begin; e < end; ++e) scores[e * heads + k] *= inverse;
  }
}

__global__ void edge_softmax_backward_kernel(const int64_t* indptr, int64_t rows, const float* alpha, float* grad,
                                             int64_t heads) {
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads, begin = indptr[i], end = indptr[i + 1];
    float dot = 0.0f;
    for (int64_t e = begin; e < end; ++e) dot += __fmul_rn(alpha[e * heads + k], grad[e * heads + k]);
    for (int64_t e = begin; e < end; ++e) grad[e * heads + k] = alpha[e * heads + k] * (grad[e * heads + k] - dot);
  }
}

// One thread per (row, group of 4 heads).
__global__ void edge_dropout_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows,
                                    const int64_t* row_gid, const int64_t* col_gid, float p, uint64_t seed,
                                    uint64_t rng_stream, float scale, const float* in, float* out, int64_t heads) {
  const int64_t groups = (heads + 3) / 4;
  for (int64_t t = grid_first(); t < rows * groups; t += grid_step()) {
    const int64_t i = t / groups, group = t % groups;
    const uint64_t key = rng::uniform_u64(seed, rng_stream, uint64_t(group));
    const uint64_t dst = uint64_t(row_gid[i]);
    const int64_t first = group * 4, last = first + 4 < heads ? first + 4 : heads;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const rng::Philox4 bits = rng::pair_bits(key, dst, uint64_t(col_gid[indices[e]]));
      for (int64_t k = first; k < last; ++k) {
        const bool keep = rng::word_uniform(bits.v[k - first]) >= p;
        out[e * heads + k] = keep ? in[e * heads + k] * scale : 0.0f;
      }
    }
  }
}

// out[i, c] = sum over row i of weights[e, c / F] * x[j, c]; one thread per (row, column).
__global__ void weighted_spmm_kernel(const int64_t* indptr, const int32_t* indices, const int32_t* edge_of,
                                     int64_t rows, const float* weights, int64_t heads, const float* x,
                                     int64_t x_stride, float* out, int64_t out_stride, int64_t width,
                                     int64_t cols) {
  for (int64_t t = grid_first(); t < rows * cols; t += grid_step()) {
    const int64_t i = t / cols, c = t % cols, k = c / width;
    float sum = 0.0f;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t edge = edge_of ? int64_t(edge_of[e]) : e;
      sum += __fmul_rn(weights[edge * heads + k], x[int64_t(indices[e]) * x_stride + c]);
    }
    out[i * out_stride + c] = sum;
  }
}

__global__ void edge_dot_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows, const float* g,
                                int64_t g_stride, const float* x, int64_t x_stride, float* out, int64_t heads,
                                int64_t width) {
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads;
    const float* gi = g + i * g_stride + k * width;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const float* xj = x + int64_t(indices[e]) * x_stride + k * width;
      float sum = 0.0f;
      for (int64_t f = 0; f < width; ++f) sum += gi[f] * xj[f];
      out[e * heads + k] = sum;
    }
  }
}

__global__ void elu_dropout_kernel(float* h, int64_t rows, int64_t cols, int64_t h_stride, const int64_t* row_gid,
                                   float p, uint32_t threshold, uint64_t seed, uint64_t rng_stream, float scale,
                                   float* mask,
                                   int64_t mask_stride) {
  for (int64_t t = grid_first(); t < rows * cols; t += grid_step()) {
    const int64_t r = t / cols, c = t % cols;
    float factor = 1.0f;
    if (p > 0.0f) {
      const uint64_t index = uint64_t(row_gid[r]) * uint64_t(cols) + uint64_t(c);
      factor = rng::dropout_keep(seed, rng_stream, index, threshold) ? scale : 0.0f;
    }
    float* element = h + r * h_stride + c;
    const float value = *element;
    const float y = value > 0.0f ? value : expm1f(value);
    const float slope = value > 0.0f ? 1.0f : expf(value);
    *element = y * factor;
    if (mask) mask[r * mask_stride + c] = factor * slope;
  }
}

// The fused attention (gat_attention, gat_attention_backward). Simple thread mappings, as the unfused kernels
// above: the forward takes one thread per (row, column), which walks its row with its own online softmax for
// its head (the head's scores and mask are recomputed by each of its F threads: cheap next to the gathered
// rows, and no shared state); the backward one thread per (row, head) for pass 1 and one per (source, column)
// and (source, head) for pass 2. No atomics: deterministic.
__device__ __forceinline__ float edge_factor(float p, float scale, uint64_t seed, uint64_t rng_stream, int64_t k,
                                             uint64_t dst, uint64_t src) {
  if (p == 0.0f) return 1.0f;
  const uint64_t key = rng::uniform_u64(seed, rng_stream, uint64_t(k / 4));
  const rng::Philox4 bits = rng::pair_bits(key, dst, src);
  return rng::word_uniform(bits.v[k % 4]) >= p ? scale : 0.0f;
}

__global__ void gat_attention_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows,
                                     const int64_t* row_gid, const int64_t* col_gid, float p, float scale,
                                     uint64_t seed, uint64_t rng_stream, const float* s_dst, int64_t dst_stride,
                                     const float* s_src, int64_t src_stride, float slope, const float* x,
                                     int64_t x_stride, float* out, int64_t out_stride, float* stats,
                                     int64_t stats_stride, int64_t heads, int64_t width) {
  const int64_t cols = heads * width;
  for (int64_t t = grid_first(); t < rows * cols; t += grid_step()) {
    const int64_t i = t / cols, c = t % cols, k = c / width;
    const float d = s_dst[i * dst_stride + k];
    const uint64_t dst = p > 0.0f ? uint64_t(row_gid[i]) : 0;
    float m = -INFINITY, l = 0.0f, acc = 0.0f;
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t j = indices[e];
      const float z = leaky(d + s_src[j * src_stride + k], slope);
      if (z > m) {
        const float r = l > 0.0f ? expf(m - z) : 0.0f;
        l = __fmul_rn(l, r);
        acc = __fmul_rn(acc, r);
        m = z;
      }
      const float w = expf(z - m);
      l += w;
      const float f = edge_factor(p, scale, seed, rng_stream, k, dst, p > 0.0f ? uint64_t(col_gid[j]) : 0);
      if (f != 0.0f) acc += __fmul_rn(__fmul_rn(w, f), x[j * x_stride + c]);
    }
    const float inverse = l > 0.0f ? 1.0f / l : 0.0f;
    out[i * out_stride + c] = acc * inverse;
    if (c % width == 0) {
      stats[i * stats_stride + k] = m;
      stats[i * stats_stride + heads + k] = inverse;
    }
  }
}

__global__ void gat_attention_rows_kernel(const int64_t* indptr, const int32_t* indices, int64_t rows,
                                          const int64_t* row_gid, const int64_t* col_gid, float p, float scale,
                                          uint64_t seed, uint64_t rng_stream, const float* s_dst,
                                          int64_t dst_stride, const float* s_src, int64_t src_stride, float slope,
                                          const float* x, int64_t x_stride, const float* stats,
                                          int64_t stats_stride, const float* g, int64_t g_stride, float* row_dot,
                                          int64_t row_dot_stride, float* grad_s_dst, int64_t grad_dst_stride,
                                          int64_t heads, int64_t width) {
  for (int64_t t = grid_first(); t < rows * heads; t += grid_step()) {
    const int64_t i = t / heads, k = t % heads;
    const float d = s_dst[i * dst_stride + k], m = stats[i * stats_stride + k],
                inverse = stats[i * stats_stride + heads + k];
    const uint64_t dst = p > 0.0f ? uint64_t(row_gid[i]) : 0;
    const float* gi = g + i * g_stride + k * width;
    float dot = 0.0f;
    for (int pass = 0; pass < 2; ++pass) {  // pass 0: S_i; pass 1: the sum of dz (td recomputed)
      float sum = 0.0f;
      for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
        const int64_t j = indices[e];
        const float zk = d + s_src[j * src_stride + k];
        const float alpha = expf(leaky(zk, slope) - m) * inverse;
        const float f = edge_factor(p, scale, seed, rng_stream, k, dst, p > 0.0f ? uint64_t(col_gid[j]) : 0);
        float td = 0.0f;
        if (f != 0.0f) {
          const float* xj = x + j * x_stride + k * width;
          for (int64_t c = 0; c < width; ++c) td += gi[c] * xj[c];
          if (p > 0.0f) td *= f;
        }
        if (pass == 0) {
          sum += __fmul_rn(alpha, td);
        } else {
          const float dz = alpha * (td - dot);
          sum += zk > 0.0f ? dz : slope * dz;
        }
      }
      if (pass == 0) {
        dot = sum;
        row_dot[i * row_dot_stride + k] = sum;
      } else {
        grad_s_dst[i * grad_dst_stride + k] = sum;
      }
    }
  }
}

// Pass 2: one thread per (source r, column c) for grad_x, or, with c < 0 (head_sums), per (source r, head k)
// for grad_s_src.
__global__ void gat_attention_sources_kernel(const int64_t* t_indptr, const int32_t* t_indices, int64_t t_rows,
                                             bool head_sums, const int64_t* row_gid, const int64_t* col_gid,
                                             float p, float scale, uint64_t seed, uint64_t rng_stream,
                                             const float* s_dst, int64_t dst_stride, const float* s_src,
                                             int64_t src_stride, float slope, const float* x, int64_t x_stride,
                                             const float* stats, int64_t stats_stride, const float* g,
                                             int64_t g_stride, const float* row_dot, int64_t row_dot_stride,
                                             float* out, int64_t out_stride, int64_t heads, int64_t width) {
  const int64_t per_row = head_sums ? heads : heads * width;
  for (int64_t t = grid_first(); t < t_rows * per_row; t += grid_step()) {
    const int64_t r = t / per_row, c = t % per_row, k = head_sums ? c : c / width;
    const float s = s_src[r * src_stride + k];
    const uint64_t src = p > 0.0f ? uint64_t(col_gid[r]) : 0;
    const float* xr = x + r * x_stride + k * width;
    float sum = 0.0f;
    for (int64_t q = t_indptr[r]; q < t_indptr[r + 1]; ++q) {
      const int64_t i = t_indices[q];
      const float zk = s_dst[i * dst_stride + k] + s;
      const float alpha = expf(leaky(zk, slope) - stats[i * stats_stride + k]) * stats[i * stats_stride + heads + k];
      const float f = edge_factor(p, scale, seed, rng_stream, k, p > 0.0f ? uint64_t(row_gid[i]) : 0, src);
      if (!head_sums) {
        if (f != 0.0f) sum += __fmul_rn(p > 0.0f ? alpha * f : alpha, g[i * g_stride + c]);
        continue;
      }
      float td = 0.0f;
      if (f != 0.0f) {
        const float* gi = g + i * g_stride + k * width;
        for (int64_t col = 0; col < width; ++col) td += gi[col] * xr[col];
        if (p > 0.0f) td *= f;
      }
      const float dz = alpha * (td - row_dot[i * row_dot_stride + k]);
      sum += zk > 0.0f ? dz : slope * dz;
    }
    out[r * out_stride + c] = sum;
  }
}

unsigned blocks_for(int64_t count) { return count > 0 ? grid_for(count, kThreads) : 1; }

// Edge matrices (nnz, heads) are indexed e * heads + k by the kernels: they must be contiguous (row stride =
// heads), which every caller's edge buffers are; a strided view would be read wrongly, so it is refused.
template <typename T>
void require_edge_matrix(Matrix<T> m, const char* what) {
  detail::require_device(m, what);
  HALOGEN_ASSERT(m.rows <= 1 || detail::row_stride(m) == m.cols,
                 "%s: an edge matrix must be contiguous (row stride %lld, %lld heads)", what,
                 (long long)detail::row_stride(m), (long long)m.cols);
}

void require_csr(const CsrView& a, const char* what) {
  HALOGEN_ASSERT(a.rows == 0 || a.device == Device::cuda, "%s is a %s CSR, the CUDA kernel needs device memory",
                 what, device_name(a.device));
}

}  // namespace

void head_scores(Matrix<const float> h, Matrix<const float> att, Matrix<float> s, Stream stream) {
  detail::require_device(h, "head_scores h");
  detail::require_device(att, "head_scores att");
  detail::require_device(s, "head_scores s");
  const int64_t heads = att.rows, width = att.cols;
  HALOGEN_ASSERT(h.cols == heads * width && s.cols == heads && s.rows == h.rows, "head_scores: shapes");
  if (h.rows == 0 || heads == 0) return;
  head_scores_kernel<<<blocks_for(h.rows * heads), kThreads, 0, to_cuda(stream)>>>(
      h.data, detail::row_stride(h), att.data, detail::row_stride(att), s.data, detail::row_stride(s), h.rows,
      heads, width);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void head_scores_backward(Matrix<const float> h, Matrix<const float> att, Matrix<const float> grad_s,
                          Matrix<float> grad_h, Matrix<float> grad_att, Stream stream) {
  detail::require_device(h, "head_scores_backward h");
  detail::require_device(att, "head_scores_backward att");
  detail::require_device(grad_s, "head_scores_backward grad_s");
  detail::require_device(grad_h, "head_scores_backward grad_h");
  detail::require_device(grad_att, "head_scores_backward grad_att");
  const int64_t heads = att.rows, width = att.cols, n = h.rows, cols = h.cols;
  HALOGEN_ASSERT(cols == heads * width && grad_s.rows == n && grad_s.cols == heads && grad_h.rows == n &&
                     grad_h.cols == cols && grad_att.rows == heads && grad_att.cols == width,
                 "head_scores_backward: shapes");
  if (n == 0 || cols == 0) return;
  head_scores_grad_h_kernel<<<blocks_for(n * cols), kThreads, 0, to_cuda(stream)>>>(
      att.data, detail::row_stride(att), grad_s.data, detail::row_stride(grad_s), grad_h.data,
      detail::row_stride(grad_h), n, width, cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
  head_scores_grad_att_kernel<<<unsigned(cols), kThreads, 0, to_cuda(stream)>>>(
      h.data, detail::row_stride(h), grad_s.data, detail::row_stride(grad_s), grad_att.data,
      detail::row_stride(grad_att), n, width);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void gat_edge_scores(const CsrView& a, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                     Matrix<float> scores, Stream stream) {
  require_csr(a, "gat_edge_scores a");
  detail::require_device(s_dst, "gat_edge_scores s_dst");
  detail::require_device(s_src, "gat_edge_scores s_src");
  require_edge_matrix(scores, "gat_edge_scores scores");
  const int64_t heads = scores.cols;
  HALOGEN_ASSERT(scores.rows == a.nnz && s_dst.rows == a.rows && s_src.rows == a.cols && s_dst.cols == heads &&
                     s_src.cols == heads,
                 "gat_edge_scores: shapes");
  if (a.rows == 0 || heads == 0) return;
  gat_edge_scores_kernel<<<blocks_for(a.rows * heads), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.indices, a.rows, s_dst.data, detail::row_stride(s_dst), s_src.data, detail::row_stride(s_src),
      slope, scores.data, heads);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void gat_edge_scores_backward(const CsrView& a, const CsrView& a_t, Span<const int32_t> a_t_edge,
                              Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                              Matrix<float> grad_scores, Matrix<float> grad_s_dst, Matrix<float> grad_s_src,
                              Stream stream) {
  require_csr(a, "gat_edge_scores_backward a");
  require_csr(a_t, "gat_edge_scores_backward a_t");
  detail::require_device(a_t_edge, "gat_edge_scores_backward a_t_edge");
  detail::require_device(s_dst, "gat_edge_scores_backward s_dst");
  detail::require_device(s_src, "gat_edge_scores_backward s_src");
  require_edge_matrix(grad_scores, "gat_edge_scores_backward grad_scores");
  detail::require_device(grad_s_dst, "gat_edge_scores_backward grad_s_dst");
  detail::require_device(grad_s_src, "gat_edge_scores_backward grad_s_src");
  const int64_t heads = grad_scores.cols;
  HALOGEN_ASSERT(grad_scores.rows == a.nnz && s_dst.rows == a.rows && s_src.rows == a.cols &&
                     grad_s_dst.rows == a.rows && grad_s_src.rows == a_t.rows && grad_s_src.cols == heads,
                 "gat_edge_scores_backward: shapes");
  if (heads == 0) return;
  if (a.rows > 0) {
    leaky_backward_rows_kernel<<<blocks_for(a.rows * heads), kThreads, 0, to_cuda(stream)>>>(
        a.indptr, a.indices, a.rows, s_dst.data, detail::row_stride(s_dst), s_src.data, detail::row_stride(s_src),
        slope, grad_scores.data, heads, grad_s_dst.data, detail::row_stride(grad_s_dst));
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
  if (a_t.rows > 0) {
    edge_column_sums_kernel<<<blocks_for(a_t.rows * heads), kThreads, 0, to_cuda(stream)>>>(
        a_t.indptr, a_t_edge.data, a_t.rows, grad_scores.data, heads, grad_s_src.data,
        detail::row_stride(grad_s_src));
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
}

void edge_softmax(const CsrView& a, Matrix<float> scores, Stream stream) {
  require_csr(a, "edge_softmax a");
  require_edge_matrix(scores, "edge_softmax scores");
  HALOGEN_ASSERT(scores.rows == a.nnz, "edge_softmax: scores has %lld rows for %lld edges", (long long)scores.rows,
                 (long long)a.nnz);
  if (a.rows == 0 || scores.cols == 0) return;
  edge_softmax_kernel<<<blocks_for(a.rows * scores.cols), kThreads, 0, to_cuda(stream)>>>(a.indptr, a.rows,
                                                                                           scores.data, scores.cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void edge_softmax_backward(const CsrView& a, Matrix<const float> alpha, Matrix<float> grad, Stream stream) {
  require_csr(a, "edge_softmax_backward a");
  require_edge_matrix(alpha, "edge_softmax_backward alpha");
  require_edge_matrix(grad, "edge_softmax_backward grad");
  HALOGEN_ASSERT(alpha.rows == a.nnz && grad.rows == a.nnz && alpha.cols == grad.cols, "edge_softmax_backward");
  if (a.rows == 0 || grad.cols == 0) return;
  edge_softmax_backward_kernel<<<blocks_for(a.rows * grad.cols), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.rows, alpha.data, grad.data, grad.cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void edge_dropout(const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
                  const EpilogueParams& params, Matrix<const float> in, Matrix<float> out, Stream stream) {
  require_csr(a, "edge_dropout a");
  require_edge_matrix(in, "edge_dropout in");
  require_edge_matrix(out, "edge_dropout out");
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", double(p));
  HALOGEN_ASSERT(in.rows == a.nnz && out.rows == a.nnz && in.cols == out.cols, "edge_dropout: shapes");
  const int64_t heads = in.cols;
  if (a.nnz == 0 || heads == 0) return;
  if (p == 0.0f) {
    if (out.data != in.data)
      CUDA_CHECK(cudaMemcpyAsync(out.data, in.data, sizeof(float) * a.nnz * heads, cudaMemcpyDeviceToDevice,
                                         to_cuda(stream)));
    return;
  }
  detail::require_device(row_gid, "edge_dropout row_gid");
  detail::require_device(col_gid, "edge_dropout col_gid");
  HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "edge_dropout: ids");
  const int64_t groups = (heads + 3) / 4;
  edge_dropout_kernel<<<blocks_for(a.rows * groups), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.indices, a.rows, row_gid.data, col_gid.data, p, params.seed, params.rng_stream, 1.0f / (1.0f - p),
      in.data, out.data, heads);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void weighted_spmm(const CsrView& a, Matrix<const float> weights, Matrix<const float> x, Matrix<float> out,
                   Stream stream) {
  require_csr(a, "weighted_spmm a");
  require_edge_matrix(weights, "weighted_spmm weights");
  detail::require_device(x, "weighted_spmm x");
  detail::require_device(out, "weighted_spmm out");
  const int64_t heads = weights.cols;
  HALOGEN_ASSERT(heads >= 1 && weights.rows == a.nnz && x.rows == a.cols && out.rows == a.rows &&
                     x.cols == out.cols && x.cols % heads == 0,
                 "weighted_spmm: shapes");
  if (a.rows == 0 || out.cols == 0) return;
  weighted_spmm_kernel<<<blocks_for(a.rows * out.cols), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.indices, nullptr, a.rows, weights.data, heads, x.data, detail::row_stride(x), out.data,
      detail::row_stride(out), x.cols / heads, out.cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void weighted_spmm_transpose(const CsrView& a_t, Span<const int32_t> a_t_edge, Matrix<const float> weights,
                             Matrix<const float> g, Matrix<float> out, Stream stream) {
  require_csr(a_t, "weighted_spmm_transpose a_t");
  detail::require_device(a_t_edge, "weighted_spmm_transpose a_t_edge");
  require_edge_matrix(weights, "weighted_spmm_transpose weights");
  detail::require_device(g, "weighted_spmm_transpose g");
  detail::require_device(out, "weighted_spmm_transpose out");
  const int64_t heads = weights.cols;
  HALOGEN_ASSERT(heads >= 1 && g.rows == a_t.cols && out.rows == a_t.rows && g.cols == out.cols &&
                     g.cols % heads == 0,
                 "weighted_spmm_transpose: shapes");
  if (a_t.rows == 0 || out.cols == 0) return;
  weighted_spmm_kernel<<<blocks_for(a_t.rows * out.cols), kThreads, 0, to_cuda(stream)>>>(
      a_t.indptr, a_t.indices, a_t_edge.data, a_t.rows, weights.data, heads, g.data, detail::row_stride(g),
      out.data, detail::row_stride(out), g.cols / heads, out.cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void edge_dot(const CsrView& a, Matrix<const float> g, Matrix<const float> x, Matrix<float> out, Stream stream) {
  require_csr(a, "edge_dot a");
  detail::require_device(g, "edge_dot g");
  detail::require_device(x, "edge_dot x");
  require_edge_matrix(out, "edge_dot out");
  const int64_t heads = out.cols;
  HALOGEN_ASSERT(heads >= 1 && out.rows == a.nnz && g.rows == a.rows && x.rows == a.cols && g.cols == x.cols &&
                     x.cols % heads == 0,
                 "edge_dot: shapes");
  if (a.rows == 0) return;
  edge_dot_kernel<<<blocks_for(a.rows * heads), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.indices, a.rows, g.data, detail::row_stride(g), x.data, detail::row_stride(x), out.data, heads,
      x.cols / heads);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void gat_attention(const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
                   const EpilogueParams& params, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                   Matrix<const float> x, Matrix<float> out, Matrix<float> stats, Stream stream) {
  require_csr(a, "gat_attention a");
  detail::require_device(s_dst, "gat_attention s_dst");
  detail::require_device(s_src, "gat_attention s_src");
  detail::require_device(x, "gat_attention x");
  detail::require_device(out, "gat_attention out");
  detail::require_device(stats, "gat_attention stats");
  const int64_t heads = s_dst.cols;
  HALOGEN_ASSERT(heads >= 1 && s_dst.rows == a.rows && s_src.rows == a.cols && s_src.cols == heads &&
                     x.rows == a.cols && out.rows == a.rows && out.cols == x.cols && x.cols % heads == 0 &&
                     stats.rows == a.rows && stats.cols == 2 * heads,
                 "gat_attention: shapes");
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", double(p));
  if (p > 0.0f) {
    detail::require_device(row_gid, "gat_attention row_gid");
    detail::require_device(col_gid, "gat_attention col_gid");
    HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "gat_attention: ids");
  }
  if (a.rows == 0 || x.cols == 0) return;
  gat_attention_kernel<<<blocks_for(a.rows * x.cols), kThreads, 0, to_cuda(stream)>>>(
      a.indptr, a.indices, a.rows, row_gid.data, col_gid.data, p, p > 0.0f ? 1.0f / (1.0f - p) : 1.0f,
      params.seed, params.rng_stream, s_dst.data, detail::row_stride(s_dst), s_src.data, detail::row_stride(s_src),
      slope, x.data, detail::row_stride(x), out.data, detail::row_stride(out), stats.data,
      detail::row_stride(stats), heads, x.cols / heads);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

void gat_attention_backward(const CsrView& a, const CsrView& a_t, Span<const int64_t> row_gid,
                            Span<const int64_t> col_gid, const EpilogueParams& params, Matrix<const float> s_dst,
                            Matrix<const float> s_src, float slope, Matrix<const float> x, Matrix<const float> stats,
                            Matrix<const float> g, Matrix<float> row_dot, Matrix<float> grad_x,
                            Matrix<float> grad_s_dst, Matrix<float> grad_s_src, Stream stream) {
  require_csr(a, "gat_attention_backward a");
  require_csr(a_t, "gat_attention_backward a_t");
  detail::require_device(s_dst, "gat_attention_backward s_dst");
  detail::require_device(s_src, "gat_attention_backward s_src");
  detail::require_device(x, "gat_attention_backward x");
  detail::require_device(stats, "gat_attention_backward stats");
  detail::require_device(g, "gat_attention_backward g");
  detail::require_device(row_dot, "gat_attention_backward row_dot");
  detail::require_device(grad_x, "gat_attention_backward grad_x");
  detail::require_device(grad_s_dst, "gat_attention_backward grad_s_dst");
  detail::require_device(grad_s_src, "gat_attention_backward grad_s_src");
  const int64_t heads = s_dst.cols;
  HALOGEN_ASSERT(heads >= 1 && a_t.rows == a.cols && a_t.cols == a.rows && s_dst.rows == a.rows &&
                     s_src.rows == a.cols && s_src.cols == heads && x.rows == a.cols && x.cols % heads == 0 &&
                     stats.rows == a.rows && stats.cols == 2 * heads && g.rows == a.rows && g.cols == x.cols &&
                     row_dot.rows == a.rows && row_dot.cols == heads && grad_x.rows == a.cols &&
                     grad_x.cols == x.cols && grad_s_dst.rows == a.rows && grad_s_dst.cols == heads &&
                     grad_s_src.rows == a.cols && grad_s_src.cols == heads,
                 "gat_attention_backward: shapes");
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", double(p));
  if (p > 0.0f) {
    detail::require_device(row_gid, "gat_attention_backward row_gid");
    detail::require_device(col_gid, "gat_attention_backward col_gid");
    HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "gat_attention_backward: ids");
  }
  const float scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
  const int64_t width = x.cols / heads;
  if (a.rows > 0) {
    gat_attention_rows_kernel<<<blocks_for(a.rows * heads), kThreads, 0, to_cuda(stream)>>>(
        a.indptr, a.indices, a.rows, row_gid.data, col_gid.data, p, scale, params.seed, params.rng_stream,
        s_dst.data, detail::row_stride(s_dst), s_src.data, detail::row_stride(s_src), slope, x.data,
        detail::row_stride(x), stats.data, detail::row_stride(stats), g.data, detail::row_stride(g), row_dot.data,
        detail::row_stride(row_dot), grad_s_dst.data, detail::row_stride(grad_s_dst), heads, width);
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
  if (a_t.rows == 0) return;
  for (const bool head_sums : {false, true}) {
    Matrix<float> target = head_sums ? grad_s_src : grad_x;
    gat_attention_sources_kernel<<<blocks_for(a_t.rows * target.cols), kThreads, 0, to_cuda(stream)>>>(
        a_t.indptr, a_t.indices, a_t.rows, head_sums, row_gid.data, col_gid.data, p, scale, params.seed,
        params.rng_stream, s_dst.data, detail::row_stride(s_dst), s_src.data, detail::row_stride(s_src), slope,
        x.data, detail::row_stride(x), stats.data, detail::row_stride(stats), g.data, detail::row_stride(g),
        row_dot.data, detail::row_stride(row_dot), target.data, detail::row_stride(target), heads, width);
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
}

void elu_dropout(Matrix<float> h, Span<const int64_t> row_gid, const EpilogueParams& params, Matrix<float> mask,
                 Stream stream) {
  detail::require_device(h, "elu_dropout h");
  detail::require_device(mask, "elu_dropout mask");
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "dropout probability %g is not in [0, 1)", double(p));
  HALOGEN_ASSERT(mask.rows == 0 || (mask.rows == h.rows && mask.cols == h.cols), "elu_dropout: mask shape");
  HALOGEN_ASSERT(p == 0.0f || row_gid.size == h.rows, "elu_dropout: row_gid");
  if (p > 0.0f) detail::require_device(row_gid, "elu_dropout row_gid");
  if (h.size() == 0) return;
  elu_dropout_kernel<<<blocks_for(h.rows * h.cols), kThreads, 0, to_cuda(stream)>>>(
      h.data, h.rows, h.cols, detail::row_stride(h), row_gid.data, p, rng::dropout_threshold(p), params.seed,
      params.rng_stream,
      p > 0.0f ? 1.0f / (1.0f - p) : 1.0f, mask.rows > 0 ? mask.data : nullptr, detail::row_stride(mask));
  HALOGEN_CUDA_CHECK_LAUNCH();
}

}  // namespace halogen::kernels::cuda
