#pragma once
// The normalised local adjacency of one rank on the compute device: A_own, A_halo and their transposes
// (graph/local_graph.h), as CSR arrays in Buffers with kernels::CsrView accessors. Built once per model.
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

struct SparseAdjacency {
  DeviceCsr own, halo, own_t, halo_t;
  SparseAdjacency() = default;
  SparseAdjacency(const graph::LocalGraph& local, Device device)
      : own(local.a_own, device), halo(local.a_halo, device), own_t(local.a_own_t, device),
        halo_t(local.a_halo_t, device) {}
};

}  // namespace halogen::nn
