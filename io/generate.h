#pragma once
// Synthetic graphs, deterministic per seed (counter-based RNG: the same seed gives the same graph on any
// machine and thread count).
#include <cstdint>

#include "graph/graph.h"

namespace halogen::io {

// Stochastic block model with class-correlated features: `classes` equal-size blocks; each vertex draws
// about avg_degree/2 edge endpoints, a fraction `homophily` inside its block; symmetrised, deduplicated, no
// self-loops. Features = signal * class mean (a fixed random unit-scale vector per class) + N(0,1) noise.
// Random split with the given fractions (rest unlabeled for training purposes but still labeled).
struct SbmParams {
  int64_t nodes = 10000;
  int32_t classes = 8;
  double avg_degree = 16;
  double homophily = 0.8;
  int64_t features = 64;
  double signal = 1.0;
  double train_fraction = 0.6, valid_fraction = 0.2;  // test = the rest
  uint64_t seed = 1;
  // 0: every vertex draws the same number of endpoints (narrow degrees). > 2: degree-corrected SBM, vertex
  // weights Pareto-distributed so that degrees follow a power law with this exponent (e.g. 2.5).
  double degree_exponent = 0;
};
graph::Graph generate_sbm(const SbmParams& params);

// RMAT / Graph500 generator: 2^scale vertices, edge_factor * 2^scale generated edges, quadrant probabilities
// a, b, c (d = 1-a-b-c), symmetrised, deduplicated, self-loops removed. Random features (features > 0) and
// `classes` random labels with a random split, so the graph can be trained on for benchmarks.
struct RmatParams {
  int scale = 16;
  int64_t edge_factor = 16;
  double a = 0.57, b = 0.19, c = 0.19;
  int64_t features = 0;
  int32_t classes = 0;
  uint64_t seed = 1;
};
graph::Graph generate_rmat(const RmatParams& params);

}  // namespace halogen::io
