// Link scores of row pairs, their backward, and the binary cross-entropy with logits over the scores.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

void require_pairs(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, int64_t m, const char* op) {
  detail::require_host(x, op);
  detail::require_host(a, "pair rows a");
  detail::require_host(b, "pair rows b");
  HALOGEN_ASSERT(a.size == m && b.size == m, "%s: %lld pairs but a has %lld and b %lld entries", op, (long long)m,
                 (long long)a.size, (long long)b.size);
}

}  // namespace

void pair_dot(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b, Span<float> scores, Stream) {
  detail::require_host(scores, "pair_dot scores");
  require_pairs(x, a, b, scores.size, "pair_dot x");
  const int64_t m = scores.size, n = x.rows, f = x.cols;
#pragma omp parallel for schedule(static) if (m * f >= detail::kMinParallelElements)
  for (int64_t k = 0; k < m; ++k) {
    const int32_t u = a[k], v = b[k];
    HALOGEN_ASSERT(u >= 0 && u < n && v >= 0 && v < n, "pair %lld = (%d, %d) outside [0, %lld)", (long long)k, u, v,
                   (long long)n);
    const float* xu = x.row(u);
    const float* xv = x.row(v);
    double sum = 0.0;
    for (int64_t c = 0; c < f; ++c) sum += static_cast<double>(xu[c]) * xv[c];
    scores[k] = static_cast<float>(sum);
  }
}

void pair_dot_backward(Matrix<const float> x, Span<const int32_t> a, Span<const int32_t> b,
                       Span<const float> grad_scores, Matrix<float> grad_x, Stream) {
  detail::require_host(grad_scores, "pair_dot_backward grad_scores");
  require_pairs(x, a, b, grad_scores.size, "pair_dot_backward x");
  detail::require_host(grad_x, "pair_dot_backward grad_x");
  detail::require_same_shape(grad_x, x, "grad_x", "x");
  const int64_t m = grad_scores.size, n = x.rows, f = x.cols;
  // Thread t owns the output rows [n t / T, n (t+1) / T) and walks all pairs in order, adding only into its
  // rows: every row receives its terms in pair order whatever T is (no atomics, bitwise reproducible). The
  // scan of the index arrays is repeated per thread; the f-wide updates are not.
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = n * t / threads, last = n * (t + 1) / threads;
    for (int64_t k = 0; k < m; ++k) {
      const int32_t u = a[k], v = b[k];
      const float g = grad_scores[k];
      if (u >= first && u < last) {
        float* out = grad_x.row(u);
        const float* in = x.row(v);
        for (int64_t c = 0; c < f; ++c) out[c] += g * in[c];
      }
      if (v >= first && v < last) {
        float* out = grad_x.row(v);
        const float* in = x.row(u);
        for (int64_t c = 0; c < f; ++c) out[c] += g * in[c];
      }
    }
  }
}

double bce_with_logits(Span<const float> scores, Span<const uint8_t> labels, float scale, Span<float> grad_scores,
                       Stream) {
  detail::require_host(scores, "bce_with_logits scores");
  detail::require_host(labels, "bce_with_logits labels");
  detail::require_host(grad_scores, "bce_with_logits grad_scores");
  const int64_t m = scores.size;
  HALOGEN_ASSERT(labels.size == m && grad_scores.size == m, "%lld scores, %lld labels, %lld gradients",
                 (long long)m, (long long)labels.size, (long long)grad_scores.size);
  // Fixed blocks summed in order: the total does not depend on the thread count.
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  std::vector<double> block_sums(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (m >= detail::kMinParallelElements)
  for (int64_t block = 0; block < blocks; ++block) {
    double sum = 0.0;
    for (int64_t k = block * kBlock; k < std::min(m, (block + 1) * kBlock); ++k) {
      const double s = scores[k], label = labels[k] ? 1.0 : 0.0;
      sum += std::max(s, 0.0) + std::log1p(std::exp(-std::fabs(s))) - label * s;
      grad_scores[k] = static_cast<float>((1.0 / (1.0 + std::exp(-s)) - label) * scale);
    }
    block_sums[block] = sum;
  }
  double total = 0.0;
  for (double sum : block_sums) total += sum;
  return total;
}

}  // namespace halogen::kernels::cpu
