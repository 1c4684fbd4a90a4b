#include "nn/sparse_adjacency.h"

namespace halogen::nn {

DeviceCsr::DeviceCsr(const graph::LocalCsr& host, Device device)
    : rows_(host.rows), cols_(host.cols), indptr_(host.rows + 1, device), indices_(host.nnz(), device),
      values_(host.nnz(), device) {
  indptr_.copy_from_host(host.indptr.data(), host.rows + 1);
  indices_.copy_from_host(host.indices.data(), host.nnz());
  values_.copy_from_host(host.values.data(), host.nnz());
}

kernels::CsrView DeviceCsr::view() const {
  return kernels::CsrView{rows_, cols_, indices_.size(), indptr_.data(), indices_.data(), values_.data(),
                          indptr_.device()};
}

int64_t DeviceCsr::bytes_for(int64_t rows, int64_t nnz) {
  return (rows + 1) * static_cast<int64_t>(sizeof(int64_t)) + nnz * static_cast<int64_t>(sizeof(int32_t) + sizeof(float));
}

}  // namespace halogen::nn
