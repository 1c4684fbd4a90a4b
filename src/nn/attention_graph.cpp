#include "nn/attention_graph.h"

#include <vector>

#include "core/error.h"

namespace halogen::nn {

AttentionGraph::AttentionGraph(const graph::Shard& shard, Device device)
    : num_owned_(shard.num_owned()), num_halo_(shard.num_halo()) {
  const int64_t n = num_owned_, cols = n + num_halo_;
  HALOGEN_ASSERT(static_cast<int64_t>(shard.indptr.size()) == n + 1);
  std::vector<int64_t> indptr(n + 1, 0);
  std::vector<int32_t> indices;
  indices.reserve(shard.indices.size() + n);
  for (int64_t i = 0; i < n; ++i) {
    bool self_added = false;
    for (int64_t k = shard.indptr[i]; k < shard.indptr[i + 1]; ++k) {
      const int32_t j = shard.indices[k];
      HALOGEN_ASSERT(j >= 0 && j < cols, "shard column %d out of range", j);
      if (j == i) continue;  // a stored self-loop: replaced by the one added below
      if (!self_added && j > i) {
        indices.push_back(static_cast<int32_t>(i));
        self_added = true;
      }
      indices.push_back(j);
    }
    if (!self_added) indices.push_back(static_cast<int32_t>(i));
    indptr[i + 1] = static_cast<int64_t>(indices.size());
  }
  const int64_t nnz = static_cast<int64_t>(indices.size());
  HALOGEN_ASSERT(nnz < (int64_t{1} << 31), "%lld attention edges on one rank: edge ids are int32", (long long)nnz);
  // Transpose by counting sort over columns; rows stay ascending within a column.
  std::vector<int64_t> t_indptr(cols + 1, 0);
  for (int32_t j : indices) ++t_indptr[j + 1];
  for (int64_t j = 0; j < cols; ++j) t_indptr[j + 1] += t_indptr[j];
  std::vector<int32_t> t_indices(nnz);
  std::vector<int64_t> next(t_indptr.begin(), t_indptr.end() - 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t slot = next[indices[e]]++;
      t_indices[slot] = static_cast<int32_t>(i);
    }
  std::vector<int64_t> gid(shard.owned_gid);
  gid.insert(gid.end(), shard.halo_gid.begin(), shard.halo_gid.end());

  indptr_ = Buffer<int64_t>(n + 1, device);
  indptr_.copy_from_host(indptr.data(), n + 1);
  t_indptr_ = Buffer<int64_t>(cols + 1, device);
  t_indptr_.copy_from_host(t_indptr.data(), cols + 1);
  gid_ = Buffer<int64_t>(cols, device);
  gid_.copy_from_host(gid.data(), cols);
  indices_ = Buffer<int32_t>(nnz, device);
  indices_.copy_from_host(indices.data(), nnz);
  t_indices_ = Buffer<int32_t>(nnz, device);
  t_indices_.copy_from_host(t_indices.data(), nnz);
  a_ = kernels::CsrView{n, cols, nnz, indptr_.data(), indices_.data(), nullptr, device};
  a_t_ = kernels::CsrView{cols, n, nnz, t_indptr_.data(), t_indices_.data(), nullptr, device};
}

int64_t AttentionGraph::bytes_for(int64_t num_owned, int64_t num_halo, int64_t edges) {
  const int64_t cols = num_owned + num_halo;
  return (num_owned + 1 + cols + 1 + cols) * static_cast<int64_t>(sizeof(int64_t)) +
         2 * edges * static_cast<int64_t>(sizeof(int32_t));
}

}  // namespace halogen::nn
