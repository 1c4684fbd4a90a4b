#pragma once
// ElementCursor: the (row, column) of each element a grid-stride loop visits in a (rows, cols) row-major
// shape, without a 64-bit division per element. A thread's first flat index `first` and the loop's step
// `step` are split into (row, column) once; each step then adds the step's (rows, columns) and carries one
// row when the column passes the end. (A 64-bit integer division costs tens of instructions on a GPU, more
// than the load and store of an elementwise kernel's element.)
//
//   for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) op(e.row, e.col);
//
// visits exactly the elements of flat index first, first + step, first + 2 step, ... below rows * cols, in
// that order, i.e. the same elements as `for (i = first; i < rows * cols; i += step) op(i / cols, i % cols)`.
// cols <= 0 visits nothing. Plain C++ (no CUDA header), so that a CPU test can check it against the division.
#include <cstdint>

#if defined(__CUDACC__)
#define HALOGEN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HALOGEN_HOST_DEVICE inline
#endif

namespace halogen::kernels::cuda {

struct ElementCursor {
  int64_t row = 0, col = 0;
  int64_t step_rows = 0, step_cols = 0, cols = 0;

  HALOGEN_HOST_DEVICE ElementCursor(int64_t first, int64_t step, int64_t num_cols) : cols(num_cols) {
    if (num_cols <= 0) {
      row = INT64_MAX;  // nothing to visit
      return;
    }
    row = first / num_cols;
    col = first - row * num_cols;
    step_rows = step / num_cols;
    step_cols = step - step_rows * num_cols;
  }
  HALOGEN_HOST_DEVICE void advance() {
    row += step_rows;
    col += step_cols;
    if (col >= cols) {  // col < 2 cols: one carry suffices
      col -= cols;
      ++row;
    }
  }
};

}  // namespace halogen::kernels::cuda
