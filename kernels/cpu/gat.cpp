// GAT's ops on the CPU (kernels/ops.h, "GAT"): per-head scores, edge scores (SDDMM) and their backward, edge
// softmax, attention dropout, the per-head weighted SpMM, its transpose and its weight gradient, the fused
// attention and its backward (ELU + dropout, elu_dropout, is with the other epilogues in epilogue.cpp).
// Every op is row-parallel over its CSR (OpenMP, static schedule): each output row is written by one thread,
// so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/checks.h"
#include "kernels/cpu/gate_math.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

void require_csr(const CsrView& a, const char* what) {
  HALOGEN_ASSERT(a.device == Device::cpu, "%s is a %s CSR, the CPU kernel needs host memory", what,
                 device_name(a.device));
  HALOGEN_ASSERT(a.rows == 0 || a.indptr != nullptr, "%s has no row pointers", what);
}

// An edge matrix (nnz, K), contiguous.
void require_edges(const Matrix<const float>& m, int64_t nnz, const char* what) {
  detail::require_host(m, what);
  HALOGEN_ASSERT(m.rows == nnz && (m.rows <= 1 || m.stride == m.cols), "%s is (%lld, %lld) stride %lld, expected "
                 "(%lld, K) contiguous", what, (long long)m.rows, (long long)m.cols, (long long)m.stride,
                 (long long)nnz);
}

// Without a branch (the sign of z is random: a branch would be mispredicted half the time). Bit for bit
// z > 0 ? z : slope * z.
float leaky(float z, float slope) { return std::max(z, 0.0f) + slope * std::min(z, 0.0f); }

// The four words of rng::pair_bits(key, dst, src[i]) for i < count, bit for bit (the test checks), as one loop
// over i that GCC vectorises (compiled for AVX2 and for baseline x86-64), like epilogue.cpp's uniform_block:
// several times faster than one scalar Philox per edge. words[w * kPairChunk + i] is word w of edge i.
constexpr int64_t kPairChunk = 64;
__attribute__((target_clones("avx512f", "avx2", "default"))) void pair_words(uint64_t key, uint64_t dst,
                                                                  const uint64_t* __restrict__ src, int64_t count,
                                                                  uint32_t* __restrict__ words) {
  const uint32_t key0 = static_cast<uint32_t>(key), key1 = static_cast<uint32_t>(key >> 32);
  const uint32_t dst0 = static_cast<uint32_t>(dst), dst1 = static_cast<uint32_t>(dst >> 32);
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    uint32_t c0 = dst0, c1 = dst1, c2 = static_cast<uint32_t>(src[i]), c3 = static_cast<uint32_t>(src[i] >> 32),
             k0 = key0, k1 = key1;
#pragma GCC unroll 10
    for (int round = 0; round < 10; ++round) {
      const uint64_t product0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      const uint64_t product1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ k0;
      const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(product1);
      c3 = static_cast<uint32_t>(product0);
      c0 = next0;
      c2 = next2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    words[i] = c0;
    words[kPairChunk + i] = c1;
    words[2 * kPairChunk + i] = c2;
    words[3 * kPairChunk + i] = c3;
  }
}

// As pair_words, with one destination id per edge (the fused ops: the same dst for a row of A, the same src for
// a row of A^T).
__attribute__((target_clones("avx512f", "avx2", "default"))) void pair_words_arrays(uint64_t key,
                                                                         const uint64_t* __restrict__ dst,
                                                                         const uint64_t* __restrict__ src,
                                                                         int64_t count,
                                                                         uint32_t* __restrict__ words) {
  const uint32_t key0 = static_cast<uint32_t>(key), key1 = static_cast<uint32_t>(key >> 32);
#pragma omp simd
  for (int64_t i = 0; i < count; ++i) {
    uint32_t c0 = static_cast<uint32_t>(dst[i]), c1 = static_cast<uint32_t>(dst[i] >> 32),
             c2 = static_cast<uint32_t>(src[i]), c3 = static_cast<uint32_t>(src[i] >> 32), k0 = key0, k1 = key1;
#pragma GCC unroll 10
    for (int round = 0; round < 10; ++round) {
      const uint64_t product0 = static_cast<uint64_t>(0xD2511F53u) * c0;
      const uint64_t product1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
      const uint32_t next0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ k0;
      const uint32_t next2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ k1;
      c1 = static_cast<uint32_t>(product1);
      c3 = static_cast<uint32_t>(product0);
      c0 = next0;
      c2 = next2;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    words[i] = c0;
    words[kPairChunk + i] = c1;
    words[2 * kPairChunk + i] = c2;
    words[3 * kPairChunk + i] = c3;
  }
}

// The attention dropout's factors (0 or 1 / (1 - p); 1 without dropout) of `count` <= kPairChunk edges, head
// k of edge t at factor[t * heads + k]: edge_dropout's decisions for the pairs (dst[t], src[t]).
struct EdgeMask {
  const EpilogueParams& params;
  int64_t heads;
  float scale;
  void draw(const uint64_t* dst, const uint64_t* src, int64_t count, float* factor) const {
    if (params.dropout == 0.0f) {
      std::fill(factor, factor + count * heads, 1.0f);
      return;
    }
    uint32_t words[4 * kPairChunk];
    for (int64_t group = 0, groups = (heads + 3) / 4; group < groups; ++group) {
      const uint64_t key = rng::uniform_u64(params.seed, params.rng_stream, static_cast<uint64_t>(group));
      const int64_t first = group * 4, last = std::min(heads, first + 4);
      pair_words_arrays(key, dst, src, count, words);
      for (int64_t t = 0; t < count; ++t)
        for (int64_t k = first; k < last; ++k)
          factor[t * heads + k] = rng::word_uniform(words[(k - first) * kPairChunk + t]) >= params.dropout ? scale
                                                                                                          : 0.0f;
    }
  }
};

// Prefetch the cache lines of `floats` floats from p (a gathered row: the fused ops first walk a chunk of
// edges to issue every gather, so the misses overlap, then compute on rows in cache).
inline void prefetch_row(const float* p, int64_t floats) {
  for (int64_t offset = 0; offset < floats; offset += 16) __builtin_prefetch(p + offset);
}

// Per-thread row buffers of the fused ops (grown, never shrunk).
std::vector<float>& row_buffer(int64_t floats) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(static_cast<size_t>(floats));
  return buffer;
}

// The operands of gat_attention and gat_attention_backward, for their row functions below.
struct AttentionJob {
  CsrView a, a_t;  // a_t: backward only
  Span<const int64_t> row_gid, col_gid;
  const EpilogueParams* params;
  Matrix<const float> s_dst, s_src, x, stats, g;                 // stats, g: backward
  Matrix<float> out, stats_out, row_dot, grad_x, grad_s_dst, grad_s_src;  // out, stats_out: forward
  float slope;
  int64_t heads;
};

// The row bodies of the fused ops, as functions of their own (not inlined into the OpenMP region), reading
// their operands from one AttentionJob. Measured on the 200k SBM GAT 8x8 (2 threads): the epoch fell from
// 2.9 to 2.15 s when the bodies moved out of the parallel_for lambdas, bit for bit the same results. Cloning
// them for x86-64-v3 (AVX2, FMA) gained nothing more (2.13 s) and would make results depend on the CPU.

// gat_attention's row i: the online softmax over its chunks of edges.
__attribute__((noinline)) void attention_row(const AttentionJob& job, int64_t i) {
  const CsrView& a = job.a;
  const Span<const int64_t>&row_gid = job.row_gid, &col_gid = job.col_gid;
  const Matrix<const float>&s_dst = job.s_dst, &s_src = job.s_src, &x = job.x;
  const Matrix<float>&out = job.out, &stats = job.stats_out;
  const float p = job.params->dropout, slope = job.slope;
  const int64_t heads = job.heads, cols = x.cols, width = cols / heads;
  const EdgeMask mask{*job.params, heads, p > 0.0f ? 1.0f / (1.0f - p) : 1.0f};
  // Buffer: z (then exp(z - m) * factor) and the mask's factors of one chunk, m and l of the row.
  float* buffer = row_buffer(2 * kPairChunk * heads + 2 * heads).data();
  float *z = buffer, *factor = z + kPairChunk * heads, *m = factor + kPairChunk * heads, *l = m + heads;
  uint64_t dst[kPairChunk], src[kPairChunk];
  float* __restrict__ o = out.row(i);
  std::fill(o, o + cols, 0.0f);
  std::fill(m, m + heads, -INFINITY);
  std::fill(l, l + heads, 0.0f);
  const float* d = s_dst.row(i);
  const uint64_t dst_id = p > 0.0f ? static_cast<uint64_t>(row_gid[i]) : 0;
  for (int64_t begin = a.indptr[i]; begin < a.indptr[i + 1]; begin += kPairChunk) {
    const int64_t count = std::min(kPairChunk, a.indptr[i + 1] - begin);
    // Issue the chunk's gathers first (x and s_src rows, column ids), so that the misses overlap.
    for (int64_t t = 0; t < count; ++t) {
      const int32_t j = a.indices[begin + t];
      prefetch_row(x.row(j), cols);
      __builtin_prefetch(s_src.row(j));
      if (p > 0.0f) __builtin_prefetch(&col_gid[j]);
    }
    for (int64_t t = 0; t < count; ++t) {
      const int32_t j = a.indices[begin + t];
      const float* s = s_src.row(j);
      for (int64_t k = 0; k < heads; ++k) z[t * heads + k] = leaky(d[k] + s[k], slope);
      if (p > 0.0f) {
        dst[t] = dst_id;
        src[t] = static_cast<uint64_t>(col_gid[j]);
      }
    }
    // The chunk's max: a new running max rescales the sum and the accumulator (online softmax).
    for (int64_t k = 0; k < heads; ++k) {
      float chunk_max = m[k];
      for (int64_t t = 0; t < count; ++t) chunk_max = std::max(chunk_max, z[t * heads + k]);
      if (chunk_max > m[k]) {
        if (l[k] > 0.0f) {
          const float r = std::exp(m[k] - chunk_max);
          l[k] *= r;
          float* __restrict__ ok = o + k * width;
#pragma omp simd
          for (int64_t f = 0; f < width; ++f) ok[f] *= r;
        }
        m[k] = chunk_max;
      }
    }
    mask.draw(dst, src, count, factor);
    for (int64_t t = 0; t < count; ++t)
      for (int64_t k = 0; k < heads; ++k) z[t * heads + k] -= m[k];
    detail::exp_run(z, z, count * heads);  // the chunk's exps in one vector loop
    for (int64_t t = 0; t < count; ++t)
      for (int64_t k = 0; k < heads; ++k) {
        const float e = z[t * heads + k];
        l[k] += e;
        z[t * heads + k] = e * factor[t * heads + k];
      }
    for (int64_t t = 0; t < count; ++t) {
      const float* __restrict__ xj = x.row(a.indices[begin + t]);
      for (int64_t k = 0; k < heads; ++k) {
        const float w = z[t * heads + k];  // 0 when dropped: no branch (random, it would stall the gathers)
        float* __restrict__ ok = o + k * width;
        const float* __restrict__ xk = xj + k * width;
#pragma omp simd
        for (int64_t f = 0; f < width; ++f) ok[f] += w * xk[f];
      }
    }
  }
  float* st = stats.row(i);
  for (int64_t k = 0; k < heads; ++k) {
    const float inverse = l[k] > 0.0f ? 1.0f / l[k] : 0.0f;
    float* __restrict__ ok = o + k * width;
#pragma omp simd
    for (int64_t f = 0; f < width; ++f) ok[f] *= inverse;
    st[k] = m[k];
    st[heads + k] = inverse;
  }
}

// gat_attention_backward's pass 1, destination row i.
__attribute__((noinline)) void attention_backward_row(const AttentionJob& job, int64_t i) {
  const CsrView& a = job.a;
  const Span<const int64_t>&row_gid = job.row_gid, &col_gid = job.col_gid;
  const Matrix<const float>&s_dst = job.s_dst, &s_src = job.s_src, &x = job.x, &stats = job.stats, &g = job.g;
  const Matrix<float>&row_dot = job.row_dot, &grad_s_dst = job.grad_s_dst;
  const float p = job.params->dropout, slope = job.slope;
  const int64_t heads = job.heads, cols = x.cols, width = cols / heads;
  const EdgeMask mask{*job.params, heads, p > 0.0f ? 1.0f / (1.0f - p) : 1.0f};
  const int64_t begin = a.indptr[i], degree = a.indptr[i + 1] - begin;
  float* buffer = row_buffer(2 * degree * heads + kPairChunk * heads).data();
  float *alpha = buffer, *td = alpha + degree * heads, *factor = td + degree * heads;
  uint64_t dst[kPairChunk], src[kPairChunk];
  const float* d = s_dst.row(i);
  const float* st = stats.row(i);
  const float* __restrict__ gi = g.row(i);
  const uint64_t dst_id = p > 0.0f ? static_cast<uint64_t>(row_gid[i]) : 0;
  for (int64_t first = 0; first < degree; first += kPairChunk) {
    const int64_t count = std::min(kPairChunk, degree - first);
    for (int64_t t = 0; t < count; ++t) {
      const int32_t j = a.indices[begin + first + t];
      prefetch_row(x.row(j), cols);
      prefetch_row(s_src.row(j), heads);
      if (p > 0.0f) __builtin_prefetch(&col_gid[j]);
    }
    if (p > 0.0f)
      for (int64_t t = 0; t < count; ++t) {
        dst[t] = dst_id;
        src[t] = static_cast<uint64_t>(col_gid[a.indices[begin + first + t]]);
      }
    mask.draw(dst, src, count, factor);
    float* chunk_alpha = alpha + first * heads;
    for (int64_t t = 0; t < count; ++t) {
      const float* s = s_src.row(a.indices[begin + first + t]);
      for (int64_t k = 0; k < heads; ++k) chunk_alpha[t * heads + k] = leaky(d[k] + s[k], slope) - st[k];
    }
    detail::exp_run(chunk_alpha, chunk_alpha, count * heads);
    for (int64_t t = 0; t < count; ++t) {
      const int32_t j = a.indices[begin + first + t];
      const float* __restrict__ xj = x.row(j);
      float* at = alpha + (first + t) * heads;
      float* tt = td + (first + t) * heads;
      for (int64_t k = 0; k < heads; ++k) {
        at[k] *= st[heads + k];
        const float f_k = factor[t * heads + k];
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t f = 0; f < width; ++f) sum += gi[k * width + f] * xj[k * width + f];
        tt[k] = p > 0.0f ? sum * f_k : sum;
      }
    }
  }
  float* S = row_dot.row(i);
  float* sum = grad_s_dst.row(i);
  for (int64_t k = 0; k < heads; ++k) {
    float dot = 0.0f;
    for (int64_t e = 0; e < degree; ++e) dot += alpha[e * heads + k] * td[e * heads + k];
    S[k] = dot;
    sum[k] = 0.0f;
  }
  for (int64_t e = 0; e < degree; ++e) {
    const float* s = s_src.row(a.indices[begin + e]);
    for (int64_t k = 0; k < heads; ++k) {
      const float dz = alpha[e * heads + k] * (td[e * heads + k] - S[k]);
      sum[k] += d[k] + s[k] > 0.0f ? dz : slope * dz;
    }
  }
}

// gat_attention_backward's pass 2, source row r (a row of a_t).
__attribute__((noinline)) void attention_backward_source_row(const AttentionJob& job, int64_t r) {
  const CsrView& a_t = job.a_t;
  const Span<const int64_t>&row_gid = job.row_gid, &col_gid = job.col_gid;
  const Matrix<const float>&s_dst = job.s_dst, &s_src = job.s_src, &x = job.x, &stats = job.stats, &g = job.g,
                            &row_dot = job.row_dot;
  const Matrix<float>&grad_x = job.grad_x, &grad_s_src = job.grad_s_src;
  const float p = job.params->dropout, slope = job.slope;
  const int64_t heads = job.heads, cols = x.cols, width = cols / heads;
  const EdgeMask mask{*job.params, heads, p > 0.0f ? 1.0f / (1.0f - p) : 1.0f};
  float* factor = row_buffer(2 * kPairChunk * heads).data();
  float* e = factor + kPairChunk * heads;  // exp(leaky(z) - m) of the chunk's edges
  uint64_t dst[kPairChunk], src[kPairChunk];
  float* __restrict__ o = grad_x.row(r);
  std::fill(o, o + cols, 0.0f);
  float* gs = grad_s_src.row(r);
  std::fill(gs, gs + heads, 0.0f);
  const float* s = s_src.row(r);
  const float* __restrict__ xr = x.row(r);
  const uint64_t src_id = p > 0.0f ? static_cast<uint64_t>(col_gid[r]) : 0;
  for (int64_t begin = a_t.indptr[r]; begin < a_t.indptr[r + 1]; begin += kPairChunk) {
    const int64_t count = std::min(kPairChunk, a_t.indptr[r + 1] - begin);
    for (int64_t t = 0; t < count; ++t) {
      const int32_t i = a_t.indices[begin + t];
      prefetch_row(g.row(i), cols);
      prefetch_row(s_dst.row(i), heads);
      prefetch_row(stats.row(i), 2 * heads);
      prefetch_row(row_dot.row(i), heads);
      if (p > 0.0f) __builtin_prefetch(&row_gid[i]);
    }
    if (p > 0.0f)
      for (int64_t t = 0; t < count; ++t) {
        dst[t] = static_cast<uint64_t>(row_gid[a_t.indices[begin + t]]);
        src[t] = src_id;
      }
    mask.draw(dst, src, count, factor);
    for (int64_t t = 0; t < count; ++t) {
      const int32_t i = a_t.indices[begin + t];
      const float* d = s_dst.row(i);
      const float* st = stats.row(i);
      for (int64_t k = 0; k < heads; ++k) e[t * heads + k] = leaky(d[k] + s[k], slope) - st[k];
    }
    detail::exp_run(e, e, count * heads);
    for (int64_t t = 0; t < count; ++t) {
      const int32_t i = a_t.indices[begin + t];
      const float* d = s_dst.row(i);
      const float* st = stats.row(i);
      const float* S = row_dot.row(i);
      const float* __restrict__ gi = g.row(i);
      for (int64_t k = 0; k < heads; ++k) {
        const float zk = d[k] + s[k];
        const float alpha = e[t * heads + k] * st[heads + k];
        const float f_k = factor[t * heads + k];  // 0 when dropped: no branch, as in the forward
        const float w = p > 0.0f ? alpha * f_k : alpha;
        float* __restrict__ ok = o + k * width;
        const float* __restrict__ gk = gi + k * width;
#pragma omp simd
        for (int64_t f = 0; f < width; ++f) ok[f] += w * gk[f];
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t f = 0; f < width; ++f) sum += gk[f] * xr[k * width + f];
        const float td = p > 0.0f ? sum * f_k : sum;
        const float dz = alpha * (td - S[k]);
        gs[k] += zk > 0.0f ? dz : slope * dz;
      }
    }
  }
}

}  // namespace

void head_scores(Matrix<const float> h, Matrix<const float> att, Matrix<float> s, Stream) {
  detail::require_host(h, "head_scores h");
  detail::require_host(att, "head_scores att");
  detail::require_host(s, "head_scores s");
  const int64_t heads = att.rows, width = att.cols;
  HALOGEN_ASSERT(h.cols == heads * width && s.cols == heads && s.rows == h.rows,
                 "head_scores: h (%lld, %lld), att (%lld, %lld), s (%lld, %lld)", (long long)h.rows,
                 (long long)h.cols, (long long)heads, (long long)width, (long long)s.rows, (long long)s.cols);
  detail::parallel_for(h.rows, h.rows * h.cols, [&](int64_t i) {
    const float* row = h.row(i);
    for (int64_t k = 0; k < heads; ++k) {
      const float* a = att.row(k);
      const float* x = row + k * width;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int64_t f = 0; f < width; ++f) sum += x[f] * a[f];
      s.row(i)[k] = sum;
    }
  });
}

void head_scores_backward(Matrix<const float> h, Matrix<const float> att, Matrix<const float> grad_s,
                          Matrix<float> grad_h, Matrix<float> grad_att, Stream) {
  detail::require_host(h, "head_scores_backward h");
  detail::require_host(att, "head_scores_backward att");
  detail::require_host(grad_s, "head_scores_backward grad_s");
  detail::require_host(grad_h, "head_scores_backward grad_h");
  detail::require_host(grad_att, "head_scores_backward grad_att");
  const int64_t heads = att.rows, width = att.cols, n = h.rows;
  detail::require_same_shape(grad_h, h, "head_scores_backward grad_h", "h");
  detail::require_same_shape(grad_att, att, "head_scores_backward grad_att", "att");
  HALOGEN_ASSERT(h.cols == heads * width && grad_s.rows == n && grad_s.cols == heads,
                 "head_scores_backward: h (%lld, %lld), att (%lld, %lld), grad_s (%lld, %lld)", (long long)n,
                 (long long)h.cols, (long long)heads, (long long)width, (long long)grad_s.rows,
                 (long long)grad_s.cols);
  if (n == 0) return;
  detail::parallel_for(n, n * h.cols, [&](int64_t i) {
    float* out = grad_h.row(i);
    const float* g = grad_s.row(i);
    for (int64_t k = 0; k < heads; ++k) {
      const float* a = att.row(k);
      const float gk = g[k];
#pragma omp simd
      for (int64_t f = 0; f < width; ++f) out[k * width + f] += gk * a[f];
    }
  });
  // grad_att: fixed row blocks (in parallel), then the blocks in order.
  const int64_t block_rows = detail::kReductionBlockRows, cols = h.cols;
  const int64_t blocks = (n + block_rows - 1) / block_rows;
  std::vector<double> block_sums(static_cast<size_t>(blocks * cols), 0.0);
  detail::parallel_for(blocks, n * cols, [&](int64_t block) {
    double* sums = block_sums.data() + block * cols;
    const int64_t end = std::min(n, (block + 1) * block_rows);
    for (int64_t i = block * block_rows; i < end; ++i) {
      const float* x = h.row(i);
      const float* g = grad_s.row(i);
      for (int64_t c = 0; c < cols; ++c) sums[c] += static_cast<double>(g[c / width]) * x[c];
    }
  });
  for (int64_t c = 0; c < cols; ++c) {
    double total = 0.0;
    for (int64_t block = 0; block < blocks; ++block) total += block_sums[block * cols + c];
    grad_att.row(c / width)[c % width] += static_cast<float>(total);
  }
}

void gat_edge_scores(const CsrView& a, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                     Matrix<float> scores, Stream) {
  require_csr(a, "gat_edge_scores a");
  detail::require_host(s_dst, "gat_edge_scores s_dst");
  detail::require_host(s_src, "gat_edge_scores s_src");
  require_edges(scores, a.nnz, "gat_edge_scores scores");
  const int64_t heads = scores.cols;
  HALOGEN_ASSERT(s_dst.rows == a.rows && s_src.rows == a.cols && s_dst.cols == heads && s_src.cols == heads,
                 "gat_edge_scores: s_dst (%lld, %lld), s_src (%lld, %lld) for A (%lld, %lld) and %lld heads",
                 (long long)s_dst.rows, (long long)s_dst.cols, (long long)s_src.rows, (long long)s_src.cols,
                 (long long)a.rows, (long long)a.cols, (long long)heads);
  detail::parallel_for(a.rows, a.nnz * heads, [&](int64_t i) {
    const float* d = s_dst.row(i);
    for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const float* s = s_src.row(a.indices[e]);
      float* out = scores.data + e * heads;
      for (int64_t k = 0; k < heads; ++k) out[k] = leaky(d[k] + s[k], slope);
    }
  });
}

void gat_edge_scores_backward(const CsrView& a, const CsrView& a_t, Span<const int32_t> a_t_edge,
                              Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                              Matrix<float> grad_scores, Matrix<float> grad_s_dst, Matrix<float> grad_s_src,
                              Stream) {
  require_csr(a, "gat_edge_scores_backward a");
  require_csr(a_t, "gat_edge_scores_backward a_t");
  detail::require_host(a_t_edge, "gat_edge_scores_backward a_t_edge");
  detail::require_host(s_dst, "gat_edge_scores_backward s_dst");
  detail::require_host(s_src, "gat_edge_scores_backward s_src");
  detail::require_host(grad_s_dst, "gat_edge_scores_backward grad_s_dst");
  detail::require_host(grad_s_src, "gat_edge_scores_backward grad_s_src");
  require_edges(grad_scores, a.nnz, "gat_edge_scores_backward grad_scores");
  const int64_t heads = grad_scores.cols;
  detail::require_same_shape(grad_s_dst, s_dst, "gat_edge_scores_backward grad_s_dst", "s_dst");
  HALOGEN_ASSERT(s_dst.rows == a.rows && s_src.rows == a.cols && s_dst.cols == heads && s_src.cols == heads &&
                     grad_s_src.rows == a_t.rows && grad_s_src.cols == heads,
                 "gat_edge_scores_backward: shapes do not match A (%lld, %lld) with %lld heads", (long long)a.rows,
                 (long long)a.cols, (long long)heads);
  // Pass 1, by destination row: dLoss/dz in place, and its row sums.
  detail::parallel_for(a.rows, a.nnz * heads, [&](int64_t i) {
    const float* d = s_dst.row(i);
    float* sum = grad_s_dst.row(i);
    for (int64_t k = 0; k < heads; ++k) sum[k] = 0.0f;
    for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const float* s = s_src.row(a.indices[e]);
      float* g = grad_scores.data + e * heads;
      for (int64_t k = 0; k < heads; ++k) {
        g[k] = d[k] + s[k] > 0.0f ? g[k] : slope * g[k];
        sum[k] += g[k];
      }
    }
  });
  // Pass 2, by source (a_t's rows): column sums.
  detail::parallel_for(a_t.rows, a.nnz * heads, [&](int64_t r) {
    float* sum = grad_s_src.row(r);
    for (int64_t k = 0; k < heads; ++k) sum[k] = 0.0f;
    for (int64_t p = a_t.indptr[r]; p < a_t.indptr[r + 1]; ++p) {
      const float* g = grad_scores.data + static_cast<int64_t>(a_t_edge[p]) * heads;
      for (int64_t k = 0; k < heads; ++k) sum[k] += g[k];
    }
  });
}

void edge_softmax(const CsrView& a, Matrix<float> scores, Stream) {
  require_csr(a, "edge_softmax a");
  require_edges(scores, a.nnz, "edge_softmax scores");
  const int64_t heads = scores.cols;
  detail::parallel_for(a.rows, a.nnz * heads, [&](int64_t i) {
    const int64_t begin = a.indptr[i], end = a.indptr[i + 1];
    float* row = scores.data + begin * heads;
    const int64_t degree = end - begin;
    for (int64_t k = 0; k < heads; ++k) {
      float max = -INFINITY;
      for (int64_t e = 0; e < degree; ++e) max = std::max(max, row[e * heads + k]);
      for (int64_t e = 0; e < degree; ++e) row[e * heads + k] -= max;
    }
    detail::exp_run(row, row, degree * heads);  // the same exps as gat_attention's, bit for bit
    for (int64_t k = 0; k < heads; ++k) {
      float sum = 0.0f;
      for (int64_t e = 0; e < degree; ++e) sum += row[e * heads + k];
      const float inverse = 1.0f / sum;
      for (int64_t e = 0; e < degree; ++e) row[e * heads + k] *= inverse;
    }
  });
}

void edge_softmax_backward(const CsrView& a, Matrix<const float> alpha, Matrix<float> grad, Stream) {
  require_csr(a, "edge_softmax_backward a");
  require_edges(alpha, a.nnz, "edge_softmax_backward alpha");
  require_edges(grad, a.nnz, "edge_softmax_backward grad");
  HALOGEN_ASSERT(alpha.cols == grad.cols);
  const int64_t heads = grad.cols;
  detail::parallel_for(a.rows, a.nnz * heads, [&](int64_t i) {
    const int64_t begin = a.indptr[i], end = a.indptr[i + 1];
    for (int64_t k = 0; k < heads; ++k) {
      float dot = 0.0f;
      for (int64_t e = begin; e < end; ++e) dot += alpha.data[e * heads + k] * grad.data[e * heads + k];
      for (int64_t e = begin; e < end; ++e) {
        float& g = grad.data[e * heads + k];
        g = alpha.data[e * heads + k] * (g - dot);
      }
    }
  });
}

void edge_dropout(const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
                  const EpilogueParams& params, Matrix<const float> in, Matrix<float> out, Stream) {
  require_csr(a, "edge_dropout a");
  require_edges(in, a.nnz, "edge_dropout in");
  require_edges(out, a.nnz, "edge_dropout out");
  HALOGEN_ASSERT(in.cols == out.cols);
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", static_cast<double>(p));
  const int64_t heads = in.cols;
  if (p == 0.0f) {
    if (out.data != in.data) std::copy(in.data, in.data + a.nnz * heads, out.data);
    return;
  }
  detail::require_host(row_gid, "edge_dropout row_gid");
  detail::require_host(col_gid, "edge_dropout col_gid");
  HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "edge_dropout: %lld row and %lld column ids "
                 "for A (%lld, %lld)", (long long)row_gid.size, (long long)col_gid.size, (long long)a.rows,
                 (long long)a.cols);
  const float scale = 1.0f / (1.0f - p);
  const int64_t groups = (heads + 3) / 4;
  detail::parallel_for(a.rows, a.nnz * heads * 8, [&](int64_t i) {
    const uint64_t dst = static_cast<uint64_t>(row_gid[i]);
    uint64_t src[kPairChunk];
    uint32_t words[4 * kPairChunk];
    for (int64_t group = 0; group < groups; ++group) {
      const uint64_t key = rng::uniform_u64(params.seed, params.rng_stream, static_cast<uint64_t>(group));
      const int64_t first = group * 4, last = std::min(heads, first + 4);
      for (int64_t begin = a.indptr[i]; begin < a.indptr[i + 1]; begin += kPairChunk) {
        const int64_t count = std::min(kPairChunk, a.indptr[i + 1] - begin);
        for (int64_t t = 0; t < count; ++t) src[t] = static_cast<uint64_t>(col_gid[a.indices[begin + t]]);
        pair_words(key, dst, src, count, words);
        for (int64_t t = 0; t < count; ++t) {
          const int64_t e = begin + t;
          for (int64_t k = first; k < last; ++k) {
            const bool keep = rng::word_uniform(words[(k - first) * kPairChunk + t]) >= p;
            out.data[e * heads + k] = keep ? in.data[e * heads + k] * scale : 0.0f;
          }
        }
      }
    }
  });
}

void weighted_spmm(const CsrView& a, Matrix<const float> weights, Matrix<const float> x, Matrix<float> out,
                   Stream) {
  require_csr(a, "weighted_spmm a");
  require_edges(weights, a.nnz, "weighted_spmm weights");
  detail::require_host(x, "weighted_spmm x");
  detail::require_host(out, "weighted_spmm out");
  const int64_t heads = weights.cols;
  HALOGEN_ASSERT(heads >= 1 && x.rows == a.cols && out.rows == a.rows && x.cols == out.cols && x.cols % heads == 0,
                 "weighted_spmm: A (%lld, %lld), %lld heads, x (%lld, %lld), out (%lld, %lld)", (long long)a.rows,
                 (long long)a.cols, (long long)heads, (long long)x.rows, (long long)x.cols, (long long)out.rows,
                 (long long)out.cols);
  const int64_t width = x.cols / heads, cols = x.cols;
  detail::parallel_for(a.rows, (a.nnz + a.rows) * cols, [&](int64_t i) {
    float* __restrict__ o = out.row(i);
    std::fill(o, o + cols, 0.0f);
    for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const float* __restrict__ src = x.row(a.indices[e]);
      const float* w = weights.data + e * heads;
      for (int64_t k = 0; k < heads; ++k) {
        const float wk = w[k];
        float* __restrict__ ok = o + k * width;
        const float* __restrict__ sk = src + k * width;
#pragma omp simd
        for (int64_t f = 0; f < width; ++f) ok[f] += wk * sk[f];
      }
    }
  });
}

void weighted_spmm_transpose(const CsrView& a_t, Span<const int32_t> a_t_edge, Matrix<const float> weights,
                             Matrix<const float> g, Matrix<float> out, Stream) {
  require_csr(a_t, "weighted_spmm_transpose a_t");
  detail::require_host(a_t_edge, "weighted_spmm_transpose a_t_edge");
  detail::require_host(weights, "weighted_spmm_transpose weights");
  detail::require_host(g, "weighted_spmm_transpose g");
  detail::require_host(out, "weighted_spmm_transpose out");
  const int64_t heads = weights.cols;
  HALOGEN_ASSERT(heads >= 1 && weights.stride == heads && g.rows == a_t.cols && out.rows == a_t.rows &&
                     g.cols == out.cols && g.cols % heads == 0,
                 "weighted_spmm_transpose: A^T (%lld, %lld), %lld heads, g (%lld, %lld), out (%lld, %lld)",
                 (long long)a_t.rows, (long long)a_t.cols, (long long)heads, (long long)g.rows, (long long)g.cols,
                 (long long)out.rows, (long long)out.cols);
  const int64_t width = g.cols / heads, cols = g.cols;
  detail::parallel_for(a_t.rows, (a_t.nnz + a_t.rows) * cols, [&](int64_t r) {
    float* __restrict__ o = out.row(r);
    std::fill(o, o + cols, 0.0f);
    for (int64_t p = a_t.indptr[r]; p < a_t.indptr[r + 1]; ++p) {
      const float* __restrict__ src = g.row(a_t.indices[p]);
      const float* w = weights.data + static_cast<int64_t>(a_t_edge[p]) * heads;
      for (int64_t k = 0; k < heads; ++k) {
        const float wk = w[k];
        float* __restrict__ ok = o + k * width;
        const float* __restrict__ sk = src + k * width;
#pragma omp simd
        for (int64_t f = 0; f < width; ++f) ok[f] += wk * sk[f];
      }
    }
  });
}

void edge_dot(const CsrView& a, Matrix<const float> g, Matrix<const float> x, Matrix<float> out, Stream) {
  require_csr(a, "edge_dot a");
  detail::require_host(g, "edge_dot g");
  detail::require_host(x, "edge_dot x");
  require_edges(out, a.nnz, "edge_dot out");
  const int64_t heads = out.cols;
  HALOGEN_ASSERT(heads >= 1 && g.rows == a.rows && x.rows == a.cols && g.cols == x.cols && x.cols % heads == 0,
                 "edge_dot: A (%lld, %lld), %lld heads, g (%lld, %lld), x (%lld, %lld)", (long long)a.rows,
                 (long long)a.cols, (long long)heads, (long long)g.rows, (long long)g.cols, (long long)x.rows,
                 (long long)x.cols);
  const int64_t width = x.cols / heads;
  detail::parallel_for(a.rows, a.nnz * x.cols, [&](int64_t i) {
    const float* __restrict__ gi = g.row(i);
    for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const float* __restrict__ xj = x.row(a.indices[e]);
      for (int64_t k = 0; k < heads; ++k) {
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t f = 0; f < width; ++f) sum += gi[k * width + f] * xj[k * width + f];
        out.data[e * heads + k] = sum;
      }
    }
  });
}

void gat_attention(const CsrView& a, Span<const int64_t> row_gid, Span<const int64_t> col_gid,
                   const EpilogueParams& params, Matrix<const float> s_dst, Matrix<const float> s_src, float slope,
                   Matrix<const float> x, Matrix<float> out, Matrix<float> stats, Stream) {
  require_csr(a, "gat_attention a");
  detail::require_host(s_dst, "gat_attention s_dst");
  detail::require_host(s_src, "gat_attention s_src");
  detail::require_host(x, "gat_attention x");
  detail::require_host(out, "gat_attention out");
  detail::require_host(stats, "gat_attention stats");
  const int64_t heads = s_dst.cols;
  HALOGEN_ASSERT(heads >= 1 && s_dst.rows == a.rows && s_src.rows == a.cols && s_src.cols == heads &&
                     x.rows == a.cols && out.rows == a.rows && out.cols == x.cols && x.cols % heads == 0 &&
                     stats.rows == a.rows && stats.cols == 2 * heads,
                 "gat_attention: A (%lld, %lld), %lld heads, x (%lld, %lld), out (%lld, %lld), stats (%lld, %lld)",
                 (long long)a.rows, (long long)a.cols, (long long)heads, (long long)x.rows, (long long)x.cols,
                 (long long)out.rows, (long long)out.cols, (long long)stats.rows, (long long)stats.cols);
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", static_cast<double>(p));
  if (p > 0.0f) {
    detail::require_host(row_gid, "gat_attention row_gid");
    detail::require_host(col_gid, "gat_attention col_gid");
    HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "gat_attention: %lld row and %lld column ids "
                   "for A (%lld, %lld)", (long long)row_gid.size, (long long)col_gid.size, (long long)a.rows,
                   (long long)a.cols);
  }
  const int64_t cols = x.cols;
  const AttentionJob job{a, {}, row_gid, col_gid, &params, s_dst, s_src, x, {}, {}, out, stats, {}, {}, {}, {},
                         slope, heads};
  detail::parallel_for(a.rows, (a.nnz + a.rows) * cols + a.nnz * heads * (p > 0.0f ? 8 : 1),
                       [&](int64_t i) { attention_row(job, i); });
}

void gat_attention_backward(const CsrView& a, const CsrView& a_t, Span<const int64_t> row_gid,
                            Span<const int64_t> col_gid, const EpilogueParams& params, Matrix<const float> s_dst,
                            Matrix<const float> s_src, float slope, Matrix<const float> x, Matrix<const float> stats,
                            Matrix<const float> g, Matrix<float> row_dot, Matrix<float> grad_x,
                            Matrix<float> grad_s_dst, Matrix<float> grad_s_src, Stream) {
  require_csr(a, "gat_attention_backward a");
  require_csr(a_t, "gat_attention_backward a_t");
  detail::require_host(s_dst, "gat_attention_backward s_dst");
  detail::require_host(s_src, "gat_attention_backward s_src");
  detail::require_host(x, "gat_attention_backward x");
  detail::require_host(stats, "gat_attention_backward stats");
  detail::require_host(g, "gat_attention_backward g");
  detail::require_host(row_dot, "gat_attention_backward row_dot");
  detail::require_host(grad_x, "gat_attention_backward grad_x");
  detail::require_host(grad_s_dst, "gat_attention_backward grad_s_dst");
  detail::require_host(grad_s_src, "gat_attention_backward grad_s_src");
  const int64_t heads = s_dst.cols;
  HALOGEN_ASSERT(heads >= 1 && a_t.rows == a.cols && a_t.cols == a.rows && a_t.nnz == a.nnz &&
                     s_dst.rows == a.rows && s_src.rows == a.cols && s_src.cols == heads && x.rows == a.cols &&
                     x.cols % heads == 0 && stats.rows == a.rows && stats.cols == 2 * heads && g.rows == a.rows &&
                     g.cols == x.cols && row_dot.rows == a.rows && row_dot.cols == heads &&
                     grad_x.rows == a.cols && grad_x.cols == x.cols && grad_s_dst.rows == a.rows &&
                     grad_s_dst.cols == heads && grad_s_src.rows == a.cols && grad_s_src.cols == heads,
                 "gat_attention_backward: shapes do not match A (%lld, %lld) with %lld heads, x (%lld, %lld)",
                 (long long)a.rows, (long long)a.cols, (long long)heads, (long long)x.rows, (long long)x.cols);
  const float p = params.dropout;
  HALOGEN_ASSERT(p >= 0.0f && p < 1.0f, "attention dropout %g is not in [0, 1)", static_cast<double>(p));
  if (p > 0.0f) {
    detail::require_host(row_gid, "gat_attention_backward row_gid");
    detail::require_host(col_gid, "gat_attention_backward col_gid");
    HALOGEN_ASSERT(row_gid.size == a.rows && col_gid.size == a.cols, "gat_attention_backward: ids");
  }
  const int64_t cols = x.cols;
  const AttentionJob job{a, a_t, row_gid, col_gid, &params, s_dst, s_src, x, stats, g, {}, {}, row_dot, grad_x,
                         grad_s_dst, grad_s_src, slope, heads};
  const int64_t rng_work = a.nnz * heads * (p > 0.0f ? 8 : 1);
  // Pass 1, by destination row: alpha and td per edge into a row buffer, S_i, then dz summed over the row.
  detail::parallel_for(a.rows, a.nnz * cols + rng_work, [&](int64_t i) { attention_backward_row(job, i); });
  // Pass 2, by source (a_t's rows): dLoss/dx and dLoss/ds_src, from the same recomputed quantities.
  detail::parallel_for(a_t.rows, (a.nnz + a_t.rows) * cols + a.nnz * cols + rng_work,
                       [&](int64_t r) { attention_backward_source_row(job, r); });
}

}  // namespace halogen::kernels::cpu
