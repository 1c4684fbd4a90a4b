#pragma once
// Small hand-made graphs for the partition tests (no generator or graph file needed).
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace halogen::partition_test {

// CSR from an edge list: rows sorted, duplicates dropped; `symmetric` stores each edge both ways.
inline graph::Csr csr_from_edges(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges,
                                 bool symmetric) {
  std::vector<std::set<int64_t>> rows(n);
  for (auto [u, v] : edges) {
    rows[u].insert(v);
    if (symmetric) rows[v].insert(u);
  }
  graph::Csr csr;
  csr.num_rows = csr.num_cols = n;
  csr.indptr.assign(1, 0);
  for (int64_t u = 0; u < n; ++u) {
    csr.indices.insert(csr.indices.end(), rows[u].begin(), rows[u].end());
    csr.indptr.push_back(static_cast<int64_t>(csr.indices.size()));
  }
  return csr;
}

// Adds features f(v, c) = v + c/100, labels v % classes, and splits (train: v % 3 == 0, valid: v % 3 == 1,
// test: the rest) to a graph whose adjacency is set.
inline void decorate(graph::Graph& g, int64_t features, int32_t classes) {
  g.num_features = features;
  g.features.resize(static_cast<size_t>(g.num_nodes) * features);
  for (int64_t v = 0; v < g.num_nodes; ++v)
    for (int64_t c = 0; c < features; ++c) g.features[v * features + c] = static_cast<float>(v) + 0.01f * c;
  g.num_classes = classes;
  g.labels.resize(g.num_nodes);
  for (int64_t v = 0; v < g.num_nodes; ++v) g.labels[v] = static_cast<int32_t>(v % classes);
  g.train.clear();
  g.valid.clear();
  g.test.clear();
  for (int64_t v = 0; v < g.num_nodes; ++v)
    (v % 3 == 0 ? g.train : v % 3 == 1 ? g.valid : g.test).push_back(v);
}

// A graph of `communities` dense blocks with a few edges between them, plus `isolated` isolated vertices at
// the end (vertices of a block are interleaved: block = v % communities, so contiguous ids cut badly).
inline graph::Graph community_graph(int64_t per_block, int32_t communities, int64_t isolated, uint64_t seed,
                                    bool directed = false, bool weighted = false) {
  std::mt19937_64 rng(seed);
  const int64_t connected = per_block * communities;
  graph::Graph g;
  g.name = "community";
  g.num_nodes = connected + isolated;
  g.directed = directed;
  std::vector<std::pair<int64_t, int64_t>> edges;
  std::uniform_int_distribution<int64_t> pick(0, per_block - 1);
  std::uniform_int_distribution<int32_t> block(0, communities - 1);
  for (int64_t v = 0; v < connected; ++v) {
    const int32_t b = static_cast<int32_t>(v % communities);
    for (int k = 0; k < 6; ++k) {
      const int64_t w = pick(rng) * communities + b;
      if (w != v) edges.emplace_back(v, w);
    }
    if (v % 10 == 0) edges.emplace_back(v, pick(rng) * communities + block(rng));  // inter-block noise
  }
  edges.emplace_back(1, 1);  // a self-loop: degree must not count it
  g.adjacency = csr_from_edges(g.num_nodes, edges, !directed);
  if (weighted) {
    g.adjacency.weight.resize(g.adjacency.nnz());
    for (int64_t e = 0; e < g.adjacency.nnz(); ++e) g.adjacency.weight[e] = 0.5f + static_cast<float>(e % 7);
  }
  decorate(g, 3, 4);
  return g;
}

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ =
        (std::filesystem::temp_directory_path() /
         ("halogen_partition_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
            .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  std::string path_;
};

}  // namespace halogen::partition_test
