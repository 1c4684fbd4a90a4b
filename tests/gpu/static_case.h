#pragma once
// The small static training case of the GPU training tests (train_parity_test, determinism_test): a 600-vertex
// synthetic graph (optionally sparse features, weighted edges) and a 3-layer model with dropout 0.5 whose options
// exercise each model's device-specific paths. Header-only; one definition shared so the suites train the same
// thing.
#include "graph/graph.h"
#include "train/synthetic_graph.h"
#include "train/trainer.h"

namespace halogen::gpu_test {

struct StaticCase {
  nn::ConvKind kind = nn::ConvKind::gcn;
  int64_t hidden = 32;
  bool sparse_features = false;  // zero 80% of the features: sparse input dropout (+ sparse first layer)
  bool edge_weight = false;      // symmetric edge weights in [0.25, 2] (--edge-weight)
  int64_t epochs = 20;
};

inline graph::Graph static_case_graph(const StaticCase& c) {
  graph::Graph g = halogen::testing::synthetic_graph(/*n=*/600, /*classes=*/4, /*features=*/24, /*picks=*/4,
                                                     /*seed=*/7, /*isolated=*/11);
  if (c.sparse_features)
    for (size_t i = 0; i < g.features.size(); ++i)
      if (i % 5 != 0) g.features[i] = 0.0f;
  if (c.edge_weight) halogen::testing::add_edge_weights(g);
  return g;
}

inline train::TrainConfig static_case_config(const StaticCase& c, Device device) {
  train::TrainConfig config;
  config.model.kind = c.kind;
  config.model.layers = 3;
  config.model.hidden = c.hidden;
  config.model.dropout = 0.5f;
  config.model.seed = 9;
  config.model.gin_learn_eps = true;  // gin only: the device-resident eps and its gradient (dot_add)
  config.model.appnp_k = 10;
  config.model.edge_weight = c.edge_weight;
  config.model.gat_heads = 4;         // gat only: 4 heads x hidden, 2 averaged output heads, attention dropout
  config.model.gat_output_heads = 2;  // 0.6 (the masks keyed by global edge ids: the same on both devices)
  config.lr = 0.02f;
  config.epochs = c.epochs;
  config.print_epochs = false;
  config.device = device;
  return config;
}

}  // namespace halogen::gpu_test
