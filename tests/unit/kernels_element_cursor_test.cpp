// kernels/cuda/element_cursor.h on the CPU: the (row, column) a CUDA grid-stride loop gets from
// ElementCursor, for every thread of a simulated grid, equals the division it replaces, and every element is
// visited exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/element_cursor.h"

using halogen::kernels::cuda::ElementCursor;

namespace {

// Runs the loop of every thread of a grid of `threads` threads (grid_step() = threads) over (rows, cols) and
// checks each visit against i / cols, i % cols; returns how often each element was visited.
std::vector<int> visit_all(int64_t rows, int64_t cols, int64_t threads) {
  std::vector<int> visits(static_cast<size_t>(rows * cols), 0);
  for (int64_t first = 0; first < threads; ++first) {
    int64_t i = first;  // the flat index the division-based loop would be at
    for (ElementCursor e(first, threads, cols); e.row < rows; e.advance(), i += threads) {
      EXPECT_EQ(e.row, i / cols) << "thread " << first;
      EXPECT_EQ(e.col, i % cols) << "thread " << first;
      if (e.row * cols + e.col < rows * cols) ++visits[static_cast<size_t>(e.row * cols + e.col)];
    }
    EXPECT_GE(i, rows * cols) << "thread " << first << " stopped early";  // it visited all its elements
  }
  return visits;
}

}  // namespace

TEST(ElementCursor, MatchesDivisionAndVisitsEveryElementOnce) {
  struct Case {
    int64_t rows, cols, threads;
  };
  // Steps smaller than a row, equal to one, a multiple of it, larger than the matrix; one column, one row.
  for (const Case c : {Case{7, 5, 3}, Case{7, 5, 5}, Case{7, 5, 10}, Case{7, 5, 64}, Case{13, 1, 4},
                       Case{1, 37, 8}, Case{50, 33, 256}, Case{3, 1000, 256}, Case{1000, 3, 256}}) {
    SCOPED_TRACE(::testing::Message() << c.rows << " x " << c.cols << ", " << c.threads << " threads");
    const std::vector<int> visits = visit_all(c.rows, c.cols, c.threads);
    for (size_t k = 0; k < visits.size(); ++k) ASSERT_EQ(visits[k], 1) << "element " << k;
  }
}

TEST(ElementCursor, EmptyShapesVisitNothing) {
  EXPECT_FALSE(ElementCursor(0, 256, 0).row < 5);  // no columns: nothing, whatever the rows
  EXPECT_FALSE(ElementCursor(0, 256, 4).row < 0);  // no rows
  EXPECT_FALSE(ElementCursor(300, 512, 4).row <
               10);  // a thread whose first index is past the end (40 elements)
}

TEST(ElementCursor, LargeIndicesBeyond32Bits) {
  // A (2^20, 3000) shape has 3.1e9 elements: flat indices pass 2^31; a thread deep in the grid still agrees.
  const int64_t cols = 3000, step = int64_t(65535) * 8 * 256;
  int64_t i = 123457;
  ElementCursor e(i, step, cols);
  for (int k = 0; k < 30; ++k, e.advance(), i += step) {
    ASSERT_EQ(e.row, i / cols);
    ASSERT_EQ(e.col, i % cols);
  }
  EXPECT_GT(i, int64_t(1) << 31);
}
