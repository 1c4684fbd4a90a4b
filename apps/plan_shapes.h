#pragma once
// The per-rank shapes `halogen plan` predicts for: from a partition directory (exact: the shards' dataset
// shapes, as `halogen info` reads them), a graph file (partitioned here with the default METIS options, or
// an assumed edge cut), or a statistics file of a published graph that is not on this machine
// (datasets/stats/*.json: counts and an assumed edge cut).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/model.h"
#include "train/epoch_estimate.h"

namespace halogen::app {

struct PlannedRank {
  nn::RankShape shape;
  train::RankTraffic traffic;
};

// A graph described by counts only (a statistics file, or a graph file with an assumed cut).
struct GraphCounts {
  std::string name;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // stored (directed) adjacency entries, both directions of an undirected edge
  int64_t num_features = 0, num_classes = 0;
  int64_t split_rows = 0;        // train + valid + test
  double feature_density = 1.0;  // nonzero fraction of the features
  double edge_cut = -1;  // fraction of stored entries whose endpoints lie in different parts (< 0: none)
  bool directed = false;  // false: stored both ways, so each rank's owned block is symmetric
};

// Reads a statistics file:
//   {"format": "halogen.graph_stats", "format_version": 1, "name": ..., "num_nodes": N, "num_edges": E (stored,
//    directed entries after symmetrisation), "num_features": F, "num_classes": C,
//    "split": {"train": .., "valid": .., "test": ..}, "feature_density": 1.0, "edge_cut": 0.25, "directed":
//    false, "source": ...}
// UserError naming the file and field when a count is missing or not positive.
GraphCounts read_graph_stats(const std::string& path);

// Shapes of P equal parts of a graph known by its counts, with `edge_cut` of every rank's entries in halo
// columns drawn uniformly from the other parts' vertices: halo rows = R (1 - exp(-k / R)) distinct rows for
// k = cut entries and R = N - N/P remote vertices (an upper bound for graphs with hubs, whose cut entries
// repeat rows), rows sent = halo rows (symmetric graph), peers = P - 1.
PlannedRank assumed_rank_shape(const GraphCounts& counts, int num_ranks);

class PlanSource {
 public:
  virtual ~PlanSource() = default;
  // Every rank's shape for a job of num_ranks ranks (UserError when this source cannot give them).
  virtual std::vector<PlannedRank> ranks(int num_ranks) = 0;
  // One line: what the shapes come from.
  virtual std::string describe(int num_ranks) const = 0;
  // The rank counts planned when --ranks is not given (empty: --ranks is required).
  virtual std::vector<int> default_ranks() const { return {}; }
};

// PATH a directory: a partition; a .json file: statistics; anything else: a graph file. edge_cut >= 0
// replaces the statistics file's cut, or makes a graph file's shapes assumed instead of partitioned.
std::unique_ptr<PlanSource> open_plan_source(const std::string& path, double edge_cut);

}  // namespace halogen::app
