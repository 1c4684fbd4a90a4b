// Row gather (pack the rows a peer needs) and row scatter-add (add partial sums received for owned rows).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {

void gather_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream) {
  detail::require_host(x, "gather_rows x");
  detail::require_host(idx, "gather_rows idx");
  detail::require_host(out, "gather_rows out");
  HALOGEN_ASSERT(out.rows == idx.size && out.cols == x.cols,
                 "gather of %lld rows of width %lld into (%lld, %lld)", (long long)idx.size,
                 (long long)x.cols, (long long)out.rows, (long long)out.cols);
  const size_t row_bytes = static_cast<size_t>(x.cols) * sizeof(float);
  if (row_bytes == 0) return;
  detail::parallel_for(idx.size, idx.size * x.cols, [&](int64_t i) {
    const int64_t source = idx[i];
    HALOGEN_ASSERT(source >= 0 && source < x.rows, "gather index %lld at %lld is outside x's %lld rows",
                   (long long)source, (long long)i, (long long)x.rows);
    std::memcpy(out.row(i), x.row(source), row_bytes);
  });
}

void scale_rows(Span<const float> scale, Matrix<float> x, Stream) {
  detail::require_host(scale, "scale_rows scale");
  detail::require_host(x, "scale_rows x");
  HALOGEN_ASSERT(scale.size == x.rows, "%lld row factors for %lld rows", (long long)scale.size, (long long)x.rows);
  const int64_t width = x.cols;
  if (width == 0) return;
  detail::parallel_for(x.rows, x.rows * width, [&](int64_t r) {
    const float factor = scale[r];
    float* row = x.row(r);
    for (int64_t c = 0; c < width; ++c) row[c] = factor * row[c];
  });
}

void scatter_add_rows(Matrix<const float> x, Span<const int32_t> idx, Matrix<float> out, Stream) {
  detail::require_host(x, "scatter_add_rows x");
  detail::require_host(idx, "scatter_add_rows idx");
  detail::require_host(out, "scatter_add_rows out");
  HALOGEN_ASSERT(x.rows == idx.size && out.cols == x.cols,
                 "scatter of (%lld, %lld) by %lld indices into width %lld", (long long)x.rows,
                 (long long)x.cols, (long long)idx.size, (long long)out.cols);
  const int64_t width = x.cols;
  if (width == 0 || idx.size == 0) return;
  for (int64_t i = 0; i < idx.size; ++i)
    HALOGEN_ASSERT(idx[i] >= 0 && idx[i] < out.rows, "scatter index %d at %lld is outside out's %lld rows",
                   idx[i], (long long)i, (long long)out.rows);
  // Partitioned by destination: thread t owns output rows [lo, hi) and adds, in index order, every x row
  // aimed there. No two threads touch one row and duplicates add in order i = 0, 1, ...: deterministic, no
  // atomics. Each thread scans all of idx (4 bytes per row), which is small next to the rows it moves.
  const int threads =
      static_cast<int>(std::min<int64_t>(omp_get_max_threads(), std::max<int64_t>(1, out.rows)));
#pragma omp parallel num_threads(threads)
  {
    const int64_t team = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t lo = out.rows * me / team, hi = out.rows * (me + 1) / team;
    for (int64_t i = 0; i < idx.size; ++i) {
      const int64_t target = idx[i];
      if (target < lo || target >= hi) continue;
      float* __restrict__ out_row = out.row(target);
      const float* __restrict__ in_row = x.row(i);
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) out_row[c] += in_row[c];
    }
  }
}

}  // namespace halogen::kernels::cpu
