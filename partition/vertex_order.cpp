// Reverse Cuthill-McKee over a shard's owned-owned subgraph and the renumbering of a shard's owned vertices
// (partition/vertex_order.h).
#include "partition/vertex_order.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace halogen::partition {

VertexOrder parse_vertex_order(const std::string& text) {
  if (text == "gid") return VertexOrder::gid;
  if (text == "rcm") return VertexOrder::rcm;
  throw UserError("--vertex-order: \"" + text + "\" is not one of rcm, gid");
}

const char* vertex_order_name(VertexOrder order) {
  return order == VertexOrder::rcm ? "rcm" : "gid";
}

namespace {

// The symmetrised graph of rcm_order: every row sorted, no duplicates, no self-loops.
struct SymmetricGraph {
  std::vector<int64_t> indptr;   // (n+1)
  std::vector<int32_t> indices;  // (entries)
  int64_t degree(int32_t v) const { return indptr[v + 1] - indptr[v]; }
};

SymmetricGraph symmetrise(int64_t n, const std::vector<int64_t>& indptr,
                          const std::vector<int32_t>& indices) {
  SymmetricGraph g;
  std::vector<int64_t> count(static_cast<size_t>(n) + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t j = indices[e];
      if (j >= n || j == i) continue;
      ++count[i + 1];
      ++count[j + 1];
    }
  for (int64_t i = 0; i < n; ++i) count[i + 1] += count[i];
  std::vector<int32_t> both(static_cast<size_t>(count[n]));
  std::vector<int64_t> fill(count.begin(), count.end() - 1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = indptr[i]; e < indptr[i + 1]; ++e) {
      const int64_t j = indices[e];
      if (j >= n || j == i) continue;
      both[fill[i]++] = static_cast<int32_t>(j);
      both[fill[j]++] = static_cast<int32_t>(i);
    }
  g.indptr.assign(static_cast<size_t>(n) + 1, 0);
  g.indices.reserve(both.size());
  for (int64_t i = 0; i < n; ++i) {
    const auto begin = both.begin() + count[i], end = both.begin() + count[i + 1];
    std::sort(begin, end);
    g.indices.insert(g.indices.end(), begin, std::unique(begin, end));
    g.indptr[i + 1] = static_cast<int64_t>(g.indices.size());
  }
  return g;
}

// Breadth-first level structure from a root, over the vertices not yet placed: the vertices in visiting order
// and the start of every level (the last entry is the end).
class LevelSearch {
 public:
  explicit LevelSearch(const SymmetricGraph& g, int64_t n) : g_(g), stamp_(static_cast<size_t>(n), 0) {}

  void run(int32_t root) {
    ++current_;
    order.clear();
    level_start.assign(1, 0);
    order.push_back(root);
    stamp_[root] = current_;
    size_t head = 0;
    while (head < order.size()) {
      const size_t level_end = order.size();
      for (; head < level_end; ++head) {
        const int32_t v = order[head];
        for (int64_t e = g_.indptr[v]; e < g_.indptr[v + 1]; ++e) {
          const int32_t w = g_.indices[e];
          if (stamp_[w] == current_) continue;
          stamp_[w] = current_;
          order.push_back(w);
        }
      }
      level_start.push_back(static_cast<int64_t>(level_end));
    }
  }
  int64_t eccentricity() const { return static_cast<int64_t>(level_start.size()) - 2; }

  std::vector<int32_t> order;
  std::vector<int64_t> level_start;

 private:
  const SymmetricGraph& g_;
  std::vector<int32_t> stamp_;
  int32_t current_ = 0;
};

// The vertex of least degree among `vertices` (ties: the smallest id).
int32_t least_degree(const SymmetricGraph& g, const int32_t* begin, const int32_t* end) {
  return *std::min_element(begin, end, [&](int32_t a, int32_t b) {
    return g.degree(a) != g.degree(b) ? g.degree(a) < g.degree(b) : a < b;
  });
}

}  // namespace

std::vector<int32_t> rcm_order(int64_t n, const std::vector<int64_t>& indptr,
                               const std::vector<int32_t>& indices) {
  const SymmetricGraph g = symmetrise(n, indptr, indices);
  LevelSearch search(g, n);
  std::vector<uint8_t> placed(static_cast<size_t>(n), 0);
  std::vector<int32_t> order;
  order.reserve(static_cast<size_t>(n));
  std::vector<int32_t> neighbours;
  auto by_degree = [&](int32_t a, int32_t b) {
    return g.degree(a) != g.degree(b) ? g.degree(a) < g.degree(b) : a < b;
  };
  for (int64_t start = 0; start < n; ++start) {
    if (placed[start]) continue;
    // The component of `start`, then George-Liu from its vertex of least degree: move to a least-degree
    // vertex of the last level while that lengthens the level structure (a few searches in practice; capped).
    search.run(static_cast<int32_t>(start));
    int32_t root = least_degree(g, search.order.data(), search.order.data() + search.order.size());
    search.run(root);
    for (int tries = 0; tries < 16; ++tries) {
      const int64_t ecc = search.eccentricity();
      const int64_t last = search.level_start[search.level_start.size() - 2];
      const int32_t candidate =
          least_degree(g, search.order.data() + last, search.order.data() + search.order.size());
      search.run(candidate);
      if (search.eccentricity() <= ecc) break;
      root = candidate;
    }
    // Cuthill-McKee from the root, then this component's run reversed.
    const size_t first = order.size();
    order.push_back(root);
    placed[root] = 1;
    for (size_t head = first; head < order.size(); ++head) {
      const int32_t v = order[head];
      neighbours.clear();
      for (int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e)
        if (!placed[g.indices[e]]) neighbours.push_back(g.indices[e]);
      std::sort(neighbours.begin(), neighbours.end(), by_degree);
      for (int32_t w : neighbours) {
        placed[w] = 1;
        order.push_back(w);
      }
    }
    std::reverse(order.begin() + static_cast<std::ptrdiff_t>(first), order.end());
  }
  HALOGEN_ASSERT(static_cast<int64_t>(order.size()) == n, "rcm placed %zu of %lld vertices", order.size(),
                 static_cast<long long>(n));
  return order;
}

namespace {

template <typename T>
void permute_rows(std::vector<T>& values, const std::vector<int32_t>& order, int64_t width) {
  if (values.empty()) return;
  std::vector<T> out(values.size());
  const int64_t n = static_cast<int64_t>(order.size());
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < n; ++k)
    std::copy_n(values.begin() + static_cast<int64_t>(order[k]) * width, width, out.begin() + k * width);
  values = std::move(out);
}

}  // namespace

void reorder_owned(graph::Shard& s, const std::vector<int32_t>& order) {
  const int64_t n_own = s.num_owned();
  HALOGEN_ASSERT(static_cast<int64_t>(order.size()) == n_own, "order has %zu entries for %lld owned vertices",
                 order.size(), static_cast<long long>(n_own));
  HALOGEN_ASSERT(s.snapshots.empty() && s.link_steps.empty(), "dynamic shards keep gid order");
  std::vector<int32_t> new_of(static_cast<size_t>(n_own), -1);
  for (int64_t k = 0; k < n_own; ++k) {
    HALOGEN_ASSERT(order[k] >= 0 && order[k] < n_own && new_of[order[k]] < 0, "order is not a permutation");
    new_of[order[k]] = static_cast<int32_t>(k);
  }

  permute_rows(s.owned_gid, order, 1);
  permute_rows(s.degree_owned, order, 1);
  permute_rows(s.features, order, s.num_features);
  permute_rows(s.labels, order, 1);
  permute_rows(s.target_offset, order, 1);
  permute_rows(s.target_scale, order, 1);
  if (!s.targets.empty()) {
    const int64_t steps = static_cast<int64_t>(s.targets.size()) / std::max<int64_t>(n_own, 1);
    std::vector<float> out(s.targets.size());
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t k = 0; k < n_own; ++k) out[t * n_own + k] = s.targets[t * n_own + order[k]];
    s.targets = std::move(out);
  }

  // Rows moved, owned columns renamed, each row sorted again (halo columns keep their ids and stay last).
  const bool weighted = !s.weight.empty();
  std::vector<int64_t> indptr(static_cast<size_t>(n_own) + 1, 0);
  for (int64_t k = 0; k < n_own; ++k) indptr[k + 1] = indptr[k] + s.indptr[order[k] + 1] - s.indptr[order[k]];
  std::vector<int32_t> indices(s.indices.size());
  std::vector<float> weight(s.weight.size());
#pragma omp parallel
  {
    std::vector<std::pair<int32_t, float>> row;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t k = 0; k < n_own; ++k) {
      row.clear();
      for (int64_t e = s.indptr[order[k]]; e < s.indptr[order[k] + 1]; ++e) {
        const int32_t column = s.indices[e];
        row.emplace_back(column < n_own ? new_of[column] : column, weighted ? s.weight[e] : 0.0f);
      }
      std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      int64_t at = indptr[k];
      for (const auto& [column, w] : row) {
        indices[at] = column;
        if (weighted) weight[at] = w;
        ++at;
      }
    }
  }
  s.indptr = std::move(indptr);
  s.indices = std::move(indices);
  s.weight = std::move(weight);

  // What part q receives stays in q's halo order (ascending gid): only the local ids of those rows change.
  for (int32_t& row : s.plan.send_idx) row = new_of[row];
  for (std::vector<int64_t>* split : {&s.train, &s.valid, &s.test}) {
    for (int64_t& i : *split) i = new_of[i];
    std::sort(split->begin(), split->end());
  }
}

void apply_vertex_order(graph::Shard& shard, VertexOrder order) {
  if (order == VertexOrder::gid) return;
  reorder_owned(shard, rcm_order(shard.num_owned(), shard.indptr, shard.indices));
}

int64_t owned_bandwidth(const graph::Shard& s) {
  const int64_t n_own = s.num_owned();
  int64_t width = 0;
  for (int64_t i = 0; i < n_own; ++i)
    for (int64_t e = s.indptr[i]; e < s.indptr[i + 1]; ++e)
      if (s.indices[e] < n_own) width = std::max<int64_t>(width, std::abs(s.indices[e] - i));
  return width;
}

}  // namespace halogen::partition
