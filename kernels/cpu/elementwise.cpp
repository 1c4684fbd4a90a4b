// Elementwise helpers on flat arrays.
#include <algorithm>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

void fill(Span<float> x, float value, Stream) {
  detail::require_host(x, "fill x");
  float* __restrict__ data = x.data;
  if (x.size < detail::kMinParallelElements) {  // not worth an OpenMP region (checks.h)
    std::fill(data, data + x.size, value);
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < x.size; ++i) data[i] = value;
}

void axpy(float alpha, Span<const float> x, Span<float> y, Stream) {
  detail::require_host(x, "axpy x");
  detail::require_host(y, "axpy y");
  HALOGEN_ASSERT(x.size == y.size, "x has %lld entries, y has %lld", (long long)x.size, (long long)y.size);
  const float* __restrict__ in = x.data;
  float* __restrict__ out = y.data;
  if (x.size < detail::kMinParallelElements) {  // not worth an OpenMP region (checks.h)
#pragma omp simd
    for (int64_t i = 0; i < x.size; ++i) out[i] += alpha * in[i];
    return;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < x.size; ++i) out[i] += alpha * in[i];
}

double sum_squares(Span<const float> x, Stream) {
  detail::require_host(x, "sum_squares x");
  // Fixed blocks summed in double (a finite float squared never overflows a double), then the blocks in
  // order: independent of the thread count. An Inf or NaN element makes the total Inf or NaN; both are
  // reported as NaN.
  constexpr int64_t kBlock = 1 << 14;
  const int64_t blocks = (x.size + kBlock - 1) / kBlock;
  std::vector<double> block_sums(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t end = std::min(x.size, (block + 1) * kBlock);
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = block * kBlock; i < end; ++i)
      sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    block_sums[block] = sum;
  }
  double total = 0.0;
  for (double sum : block_sums) total += sum;
  return std::isfinite(total) ? total : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace halogen::kernels::cpu
