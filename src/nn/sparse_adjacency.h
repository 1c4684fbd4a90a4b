#pragma once
// DeviceCsr: one CSR matrix of graph/local_graph.h (A_own, A_halo or a transpose) on the compute device, as arrays
// in Buffers with a kernels::CsrView accessor. The storage of nn::DistributedAdjacency; built once per model.
#include "core/buffer.h"
#include "graph/local_graph.h"
#include "kernels/ops.h"

namespace halogen::nn {

// One CSR matrix on a device.
class DeviceCsr {
 public:
  DeviceCsr() = default;
  DeviceCsr(const graph::LocalCsr& host, Device device);
  kernels::CsrView view() const;
  int64_t rows() const { return rows_; }
  int64_t nnz() const { return indices_.size(); }
  // Bytes a DeviceCsr of this size allocates (memory estimates).
  static int64_t bytes_for(int64_t rows, int64_t nnz);

 private:
  int64_t rows_ = 0, cols_ = 0;
  Buffer<int64_t> indptr_;
  Buffer<int32_t> indices_;
  Tensor values_;
};

}  // namespace halogen::nn
