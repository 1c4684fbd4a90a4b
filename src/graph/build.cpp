#include "graph/build.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "core/error.h"

namespace halogen::graph {

namespace {

// Sorts one row's columns (and weights) and removes duplicates; returns the new length.
int64_t sort_unique_row(int64_t* cols, float* weights, int64_t length) {
  if (!weights) {
    std::sort(cols, cols + length);
    return std::unique(cols, cols + length) - cols;
  }
  std::vector<std::pair<int64_t, float>> entries(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) entries[i] = {cols[i], weights[i]};
  // Largest weight first within equal columns, so the kept duplicate is the largest (order-independent).
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  });
  int64_t out = 0;
  for (int64_t i = 0; i < length; ++i) {
    if (out > 0 && entries[i].first == cols[out - 1]) continue;
    cols[out] = entries[i].first;
    weights[out] = entries[i].second;
    ++out;
  }
  return out;
}

Csr build(int64_t num_nodes, const std::vector<int64_t>& src, const std::vector<int64_t>& dst,
          const std::vector<float>& weight, const BuildOptions& options, EdgeList* consumed) {
  HALOGEN_ASSERT(num_nodes >= 0);
  HALOGEN_ASSERT(src.size() == dst.size());
  HALOGEN_ASSERT(weight.empty() || weight.size() == src.size());
  const int64_t num_input = static_cast<int64_t>(src.size());
  const bool weighted = !weight.empty();

  // 1. Row counts (with the reverse direction when symmetrising).
  std::vector<int64_t> count(static_cast<size_t>(num_nodes) + 1, 0);
  bool ids_ok = true;
#pragma omp parallel for schedule(static) reduction(&& : ids_ok)
  for (int64_t i = 0; i < num_input; ++i) {
    const int64_t s = src[i], d = dst[i];
    if (s < 0 || s >= num_nodes || d < 0 || d >= num_nodes) {
      ids_ok = false;
      continue;
    }
    if (options.drop_self_loops && s == d) continue;
#pragma omp atomic
    ++count[s + 1];
    if (options.symmetrize && s != d) {
#pragma omp atomic
      ++count[d + 1];
    }
  }
  HALOGEN_ASSERT(ids_ok, "edge id out of range [0, %lld)", static_cast<long long>(num_nodes));
  std::partial_sum(count.begin(), count.end(), count.begin());
  const int64_t total = count[num_nodes];

  // 2. Scatter. Order inside a row depends on threads here, but step 3 sorts it away.
  Csr csr;
  csr.num_rows = csr.num_cols = num_nodes;
  csr.indices.resize(static_cast<size_t>(total));
  if (weighted) csr.weight.resize(static_cast<size_t>(total));
  std::vector<int64_t> cursor(count.begin(), count.end() - 1);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < num_input; ++i) {
    const int64_t s = src[i], d = dst[i];
    if (options.drop_self_loops && s == d) continue;
    int64_t at;
#pragma omp atomic capture
    at = cursor[s]++;
    csr.indices[at] = d;
    if (weighted) csr.weight[at] = weight[i];
    if (options.symmetrize && s != d) {
#pragma omp atomic capture
      at = cursor[d]++;
      csr.indices[at] = s;
      if (weighted) csr.weight[at] = weight[i];
    }
  }
  std::vector<int64_t>().swap(cursor);
  if (consumed) {  // the input is no longer needed: release it before the sort
    std::vector<int64_t>().swap(consumed->src);
    std::vector<int64_t>().swap(consumed->dst);
    std::vector<float>().swap(consumed->weight);
  }

  // 3. Sort + dedupe each row, then compact left (new offsets never exceed old ones).
  std::vector<int64_t> kept(static_cast<size_t>(num_nodes), 0);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t r = 0; r < num_nodes; ++r) {
    kept[r] = sort_unique_row(csr.indices.data() + count[r],
                              weighted ? csr.weight.data() + count[r] : nullptr, count[r + 1] - count[r]);
  }
  csr.indptr.assign(static_cast<size_t>(num_nodes) + 1, 0);
  for (int64_t r = 0; r < num_nodes; ++r) {
    const int64_t from = count[r], to = csr.indptr[r];
    if (from != to) {
      std::copy(csr.indices.begin() + from, csr.indices.begin() + from + kept[r], csr.indices.begin() + to);
      if (weighted)
        std::copy(csr.weight.begin() + from, csr.weight.begin() + from + kept[r], csr.weight.begin() + to);
    }
    csr.indptr[r + 1] = to + kept[r];
  }
  csr.indices.resize(static_cast<size_t>(csr.indptr[num_nodes]));
  csr.indices.shrink_to_fit();
  if (weighted) {
    csr.weight.resize(csr.indices.size());
    csr.weight.shrink_to_fit();
  }
  return csr;
}

}  // namespace

Csr build_csr(int64_t num_nodes, const EdgeList& edges, const BuildOptions& options) {
  return build(num_nodes, edges.src, edges.dst, edges.weight, options, nullptr);
}

Csr build_csr(int64_t num_nodes, EdgeList&& edges, const BuildOptions& options) {
  return build(num_nodes, edges.src, edges.dst, edges.weight, options, &edges);
}

namespace {
uint64_t mix64(uint64_t x) {  // splitmix64's finaliser: a bijection with good avalanche
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t pair_hash(int64_t row, int64_t col) {
  return mix64(mix64(static_cast<uint64_t>(row)) + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(col) + 1);
}
}  // namespace

bool is_symmetric(const Csr& csr, int64_t* first_bad_row, int64_t* first_bad_entry) {
  if (csr.num_rows != csr.num_cols) return false;
  // Fast path, O(E), streaming and parallel: the entry set equals its transpose exactly when the sums of a
  // hash over (r, c) and over (c, r) agree (a false "symmetric" needs a 64-bit hash-sum collision, ~2^-64).
  // Only when they differ is the exact search below run, to name the first entry without a reverse.
  uint64_t forward = 0, backward = 0;
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : forward, backward)
  for (int64_t r = 0; r < csr.num_rows; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      forward += pair_hash(r, csr.indices[e]);
      backward += pair_hash(csr.indices[e], r);
    }
  }
  if (forward == backward) return true;
  int64_t bad_entry = csr.nnz();
#pragma omp parallel for schedule(dynamic, 1024) reduction(min : bad_entry)
  for (int64_t r = 0; r < csr.num_rows; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      const int64_t c = csr.indices[e];
      const auto begin = csr.indices.begin() + csr.indptr[c], end = csr.indices.begin() + csr.indptr[c + 1];
      if (!std::binary_search(begin, end, r)) {
        bad_entry = std::min(bad_entry, e);
        break;
      }
    }
  }
  if (bad_entry == csr.nnz()) return true;
  if (first_bad_entry) *first_bad_entry = bad_entry;
  if (first_bad_row) {
    *first_bad_row =
        std::upper_bound(csr.indptr.begin(), csr.indptr.end(), bad_entry) - csr.indptr.begin() - 1;
  }
  return false;
}

}  // namespace halogen::graph
