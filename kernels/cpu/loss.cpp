// Masked softmax cross-entropy (value and gradient in one pass) and accuracy counting.
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

void check_loss_inputs(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows) {
  detail::require_host(logits, "logits");
  detail::require_host(labels, "labels");
  detail::require_host(rows, "rows");
  HALOGEN_ASSERT(labels.size == logits.rows, "labels has %lld entries, logits has %lld rows",
                 (long long)labels.size, (long long)logits.rows);
}

// Rows with at most this many classes keep their exponentials on the stack and compute each once.
constexpr int64_t kStackClasses = 256;

// -log softmax(row)[label] of one row; writes (softmax - onehot) * scale into grad_row when it is not null.
// exp(row[c] - max) is the same double whether it is kept or recomputed, so both paths give the same bits.
double row_cross_entropy(const float* row, int64_t classes, int32_t label, float scale, float* grad_row) {
  float max_logit = row[0];
  for (int64_t c = 1; c < classes; ++c) max_logit = std::max(max_logit, row[c]);
  double exps[kStackClasses];
  const bool keep = classes <= kStackClasses;
  double sum_exp = 0.0;
  for (int64_t c = 0; c < classes; ++c) {
    const double e = std::exp(static_cast<double>(row[c] - max_logit));
    if (keep) exps[c] = e;
    sum_exp += e;
  }
  const double log_sum_exp = std::log(sum_exp);
  if (grad_row != nullptr) {
    const double inv_sum = 1.0 / sum_exp;
    for (int64_t c = 0; c < classes; ++c) {
      const double e = keep ? exps[c] : std::exp(static_cast<double>(row[c] - max_logit));
      grad_row[c] = static_cast<float>((e * inv_sum - (c == label ? 1.0 : 0.0)) * scale);
    }
  }
  return log_sum_exp - static_cast<double>(row[label] - max_logit);
}

}  // namespace

double softmax_cross_entropy(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                             float scale, Matrix<float> grad_logits, Stream) {
  check_loss_inputs(logits, labels, rows);
  detail::require_host(grad_logits, "grad_logits");
  detail::require_same_shape(logits, grad_logits, "logits", "grad_logits");
  const int64_t classes = logits.cols;
  HALOGEN_ASSERT(classes > 0 || rows.size == 0, "softmax over 0 classes");
  // "=" semantics: zero everywhere, then the listed rows.
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < grad_logits.rows; ++r) {
    float* row = grad_logits.row(r);
    for (int64_t c = 0; c < classes; ++c) row[c] = 0.0f;
  }
  if (rows.size == 0) return 0.0;
  // Per-block sums in parallel, then the blocks in order: the sum does not depend on the thread count.
  const int64_t blocks = (rows.size + detail::kReductionBlockRows - 1) / detail::kReductionBlockRows;
  std::vector<double> block_loss(static_cast<size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t end = std::min(rows.size, (block + 1) * detail::kReductionBlockRows);
    double loss = 0.0;
    for (int64_t i = block * detail::kReductionBlockRows; i < end; ++i) {
      const int64_t r = rows[i];
      HALOGEN_ASSERT(r >= 0 && r < logits.rows, "row %lld is outside logits' %lld rows", (long long)r,
                     (long long)logits.rows);
      const int32_t label = labels[r];
      HALOGEN_ASSERT(label >= 0 && label < classes, "row %lld has label %d, not in [0, %lld)", (long long)r,
                     label, (long long)classes);
      loss += row_cross_entropy(logits.row(r), classes, label, scale, grad_logits.row(r));
    }
    block_loss[block] = loss;
  }
  double total = 0.0;
  for (double loss : block_loss) total += loss;
  return total;
}

int64_t count_correct(Matrix<const float> logits, Span<const int32_t> labels, Span<const int64_t> rows,
                      Stream) {
  check_loss_inputs(logits, labels, rows);
  const int64_t classes = logits.cols;
  int64_t correct = 0;
#pragma omp parallel for schedule(static) reduction(+ : correct)
  for (int64_t i = 0; i < rows.size; ++i) {
    const int64_t r = rows[i];
    HALOGEN_ASSERT(r >= 0 && r < logits.rows, "row %lld is outside logits' %lld rows", (long long)r,
                   (long long)logits.rows);
    const float* row = logits.row(r);
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (row[c] > row[best]) best = c;  // strict: ties keep the lowest index
    if (classes > 0 && best == labels[r]) ++correct;
  }
  return correct;
}

}  // namespace halogen::kernels::cpu
