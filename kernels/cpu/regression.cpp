// Squared error of a prediction against targets (temporal node regression): value and gradient in one pass.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

double squared_error(Matrix<const float> y, Matrix<const float> target, double grad_scale, Matrix<float> grad_y,
                     Stream) {
  detail::require_host(y, "y");
  detail::require_host(target, "target");
  detail::require_same_shape(y, target, "y", "target");
  const bool want_grad = grad_y.rows > 0;
  if (want_grad) {
    detail::require_host(grad_y, "grad_y");
    detail::require_same_shape(y, grad_y, "y", "grad_y");
  }
  const int64_t n = y.rows, f = y.cols;
  const int64_t blocks = (n + detail::kReductionBlockRows - 1) / detail::kReductionBlockRows;
  // Fixed blocks of rows, each summed serially, then the block sums in order: independent of the thread count.
  auto block_sum = [&](int64_t b) {
    double sum = 0.0;
    const int64_t end = std::min(n, (b + 1) * detail::kReductionBlockRows);
    for (int64_t r = b * detail::kReductionBlockRows; r < end; ++r) {
      for (int64_t c = 0; c < f; ++c) {
        const double e = static_cast<double>(y(r, c)) - static_cast<double>(target(r, c));
        sum += e * e;
        if (want_grad) grad_y(r, c) = static_cast<float>(grad_scale * e);
      }
    }
    return sum;
  };
  double total = 0.0;
  if (n * f < detail::kMinParallelElements) {  // small: no OpenMP region, no allocation (checks.h)
    for (int64_t b = 0; b < blocks; ++b) total += block_sum(b);
    return total;
  }
  std::vector<double> block_sums(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) block_sums[b] = block_sum(b);
  for (double s : block_sums) total += s;
  return total;
}

}  // namespace halogen::kernels::cpu
