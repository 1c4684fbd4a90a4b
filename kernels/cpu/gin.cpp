// GIN's learnable-epsilon ops (kernels/ops.h, "GIN"): the self term (1 + eps) x and the gradient <x, grad>.
#include <algorithm>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

void one_plus_eps_add(Matrix<const float> x, Span<const float> eps, Matrix<float> out, Stream) {
  detail::require_host(x, "one_plus_eps_add x");
  detail::require_host(out, "one_plus_eps_add out");
  detail::require_host(eps, "one_plus_eps_add eps");
  detail::require_same_shape(out, x, "one_plus_eps_add out", "x");
  HALOGEN_ASSERT(eps.size == 1, "eps has %lld entries, expected 1", (long long)eps.size);
  const float scale = 1.0f + eps[0];
  const int64_t cols = x.cols;
  detail::parallel_for(x.rows, x.rows * x.cols, [&](int64_t r) {
    const float* in = x.row(r);
    float* to = out.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) to[c] += scale * in[c];
  });
}

void dot_add(Matrix<const float> a, Matrix<const float> b, Span<float> result, Stream) {
  detail::require_host(a, "dot_add a");
  detail::require_host(b, "dot_add b");
  detail::require_host(result, "dot_add result");
  detail::require_same_shape(b, a, "dot_add b", "a");
  HALOGEN_ASSERT(result.size == 1, "result has %lld entries, expected 1", (long long)result.size);
  // Fixed row blocks summed in double, then the blocks in order: independent of the thread count.
  const int64_t block_rows = detail::kReductionBlockRows, cols = a.cols;
  const int64_t blocks = (a.rows + block_rows - 1) / block_rows;
  std::vector<double> block_sums(static_cast<size_t>(blocks), 0.0);
  detail::parallel_for(blocks, a.rows * a.cols, [&](int64_t block) {
    double sum = 0.0;
    const int64_t end = std::min(a.rows, (block + 1) * block_rows);
    for (int64_t r = block * block_rows; r < end; ++r) {
      const float* x = a.row(r);
      const float* y = b.row(r);
      for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(x[c]) * static_cast<double>(y[c]);
    }
    block_sums[block] = sum;
  });
  double total = 0.0;
  for (double sum : block_sums) total += sum;
  result[0] += static_cast<float>(total);
}

}  // namespace halogen::kernels::cpu
