// Uses an installed Halogen: builds the path graph 0 - 1 - 2 with graph::build_csr (symmetrised) and multiplies
// its adjacency by x = (1, 2, 3) with kernels::spmm on the CPU. Prints the product; exits 1 unless it is (2, 4, 2).
#include <cstdint>
#include <cstdio>
#include <vector>

#include "core/buffer.h"
#include "graph/build.h"
#include "kernels/ops.h"
#include "train/trainer.h"  // compiles against the installed headers of every module train uses

namespace {

using namespace halogen;

int run() {
  graph::EdgeList edges;
  edges.src = {0, 1};
  edges.dst = {1, 2};
  const graph::Csr a = graph::build_csr(3, edges);  // 0-1, 1-0, 1-2, 2-1

  std::vector<int32_t> indices(a.indices.begin(), a.indices.end());
  kernels::CsrView view;
  view.rows = a.num_rows;
  view.cols = a.num_cols;
  view.nnz = a.nnz();
  view.indptr = a.indptr.data();
  view.indices = indices.data();

  std::vector<float> x = {1.0f, 2.0f, 3.0f};  // (3, 1)
  std::vector<float> out(3, -1.0f);           // (3, 1)
  kernels::spmm(view, Matrix<const float>{x.data(), 3, 1, 1}, Matrix<float>{out.data(), 3, 1, 1}, false);

  std::printf("spmm: %g %g %g\n", out[0], out[1], out[2]);
  // Sums of small integers are exact in float: no tolerance.
  return out[0] == 2.0f && out[1] == 4.0f && out[2] == 2.0f ? 0 : 1;
}

}  // namespace

int main() { return run(); }
