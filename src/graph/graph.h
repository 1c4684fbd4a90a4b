#pragma once
// In-memory graph types shared by io/, partition/ and training. A Graph is exactly what a graph file holds
// (layout in DESIGN.md, "Files"); global ids are int64.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::graph {

// Compressed sparse rows. Row r's columns are indices[indptr[r] .. indptr[r+1]), sorted ascending, no
// duplicates (after build). `weight` is empty for an unweighted matrix, else has nnz() entries.
struct Csr {
  int64_t num_rows = 0;
  int64_t num_cols = 0;
  std::vector<int64_t> indptr{0};
  std::vector<int64_t> indices;
  std::vector<float> weight;

  int64_t nnz() const { return static_cast<int64_t>(indices.size()); }
  int64_t degree(int64_t row) const { return indptr[row + 1] - indptr[row]; }
  bool weighted() const { return !weight.empty(); }
};

// One graph file's contents.
struct Graph {
  std::string name;
  int64_t num_nodes = 0;
  bool directed = false;     // false: adjacency is symmetric (each undirected edge stored both ways)
  int32_t num_classes = 0;   // 0 for regression / unlabeled graphs
  Csr adjacency;             // num_nodes x num_nodes

  int64_t num_features = 0;
  std::vector<float> features;  // [num_nodes, num_features] row-major
  std::vector<int32_t> labels;  // [num_nodes], -1 = unlabeled; empty when absent
  std::vector<float> targets;   // regression targets [T, num_nodes] or [num_nodes]; empty when absent
  int64_t target_steps = 0;     // T of targets (1 for static regression)

  std::vector<int64_t> train, valid, test;  // node ids (OGB convention)
  std::vector<int64_t> orig_id;             // original ids (SNAP remap); empty when ids were already 0..N-1

  std::vector<Csr> snapshots;  // dynamic graphs: one CSR per time step over the same vertices

  // How the converter transformed the stored targets (`convert --preprocess`, io/temporal.h): empty name =
  // nothing recorded. `offset`/`scale` (per vertex, or empty) map stored values back to the source's units:
  // original = stored * scale[v] + offset[v] (after expm1 for "log1p").
  struct TargetPreprocess {
    std::string name;     // "none" | "standardize per node" | "log1p"
    std::string formula;  // what was applied, and after which reference loader
    std::vector<double> offset, scale;
  } preprocess;

  int64_t num_edges() const { return adjacency.nnz(); }
};

}  // namespace halogen::graph
