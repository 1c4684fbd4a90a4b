// Layers and the whole model on one rank against a double-precision dense reference (tests/train/
// reference_model.h): forward loss equal, and every gradient entry equal to the reference's central finite
// difference. Covers GCN and GraphSAGE, both orderings of a layer (transform-first when out < in, aggregate-
// first otherwise), relu + dropout masks, an isolated vertex and an unlabelled training vertex; GIN (fixed
// and learned eps, both orderings of its first product), APPNP (the K propagation steps and their reverse),
// and weighted edges in every normalisation; GCNII (nn/models/gcnii.cpp: initial residual, identity mapping,
// the shared activation buffer of its layers), built through the model registry.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "comm/self_comm.h"
#include "nn/model.h"
#include "nn/model_registry.h"
#include "train/reference_model.h"
#include "train/synthetic_graph.h"

namespace halogen {
namespace {

struct Case {
  nn::ConvKind kind;
  int layers;
  int64_t hidden;
  float dropout;
  bool sparse_features = false;  // 80% zeros: the input dropout takes the sparse path
  bool edge_weight = false;      // symmetric weights in [0.25, 2] on every edge
  bool gin_learn_eps = false;
  int appnp_k = 10;
  float appnp_alpha = 0.1f;
  int gat_heads = 1, gat_output_heads = 1;
  float attention_dropout = 0.0f;
  bool gat_per_head_dropout = true;  // --gat-dropout original (false: pyg)
  const char* model = "";                  // a registered model by name (nn/model_registry.h); "": kind's
  std::map<std::string, nn::OptionValue> values = {};  // its options
};

void check_gradients(const Case& c) {
  graph::Graph g = testing::synthetic_graph(/*n=*/24, /*classes=*/3, /*features=*/6, /*picks=*/2, /*seed=*/5,
                                            /*isolated=*/7);
  if (c.sparse_features)
    for (size_t i = 0; i < g.features.size(); ++i)
      if (i % 5 != 0) g.features[i] = 0.0f;
  if (c.edge_weight) testing::add_edge_weights(g);
  const graph::Shard shard = testing::whole_graph_shard(g);
  comm::SelfComm comm;
  nn::ModelConfig config;
  config.kind = c.kind;
  config.layers = c.layers;
  config.hidden = c.hidden;
  config.dropout = c.dropout;
  config.seed = 11;
  config.edge_weight = c.edge_weight;
  config.gin_learn_eps = c.gin_learn_eps;
  config.appnp_k = c.appnp_k;
  config.appnp_alpha = c.appnp_alpha;
  config.gat_heads = c.gat_heads;
  config.gat_output_heads = c.gat_output_heads;
  config.attention_dropout = c.attention_dropout;
  config.gat_per_head_dropout = c.gat_per_head_dropout;
  config.name = c.model;
  config.values = c.values;
  const std::unique_ptr<nn::NodeModel> built = nn::model_spec(config).build(config, comm, shard, nullptr, Device::cpu);
  nn::NodeModel& model = *built;
  ASSERT_EQ(model.sparse_input_nonzeros() > 0, c.sparse_features && config.name.empty());
  const int64_t train_count = model.split_sizes_local()[0];
  ASSERT_EQ(train_count, static_cast<int64_t>(g.train.size()) - 1);  // vertex 3 (train, unlabelled) is dropped
  // Nonzero biases: with zero biases a row whose input is all zeros (sparse features, isolated vertex) has a
  // pre-activation of exactly 0, the kink of relu, where finite differences and the subgradient disagree.
  {
    nn::ParameterStore& store = model.parameters();
    std::vector<float> initial(store.total_size());
    store.params().copy_to_host(initial.data());
    for (int k = 0; k < store.count(); ++k)
      if (store.info(k).is_bias)
        for (int64_t e = 0; e < store.info(k).size(); ++e)
          initial[store.info(k).offset + e] = 0.05f + 0.02f * static_cast<float>(e % 3);
    store.params().copy_from_host(initial.data(), store.total_size());
  }
  const int64_t epoch = 3;
  const double loss = model.train_step_local(epoch, 1.0f / static_cast<float>(train_count)) / train_count;

  nn::ParameterStore& store = model.parameters();
  std::vector<float> params(store.total_size()), grads(store.total_size());
  store.params().copy_to_host(params.data());
  store.grads().copy_to_host(grads.data());
  testing::ReferenceModel reference{g, config, {}, nn::Model::layer_widths(config, g.num_features, g.num_classes)};
  for (int k = 0; k < store.count(); ++k) reference.infos.push_back(store.info(k));
  std::vector<double> theta(params.begin(), params.end());

  // Float forward vs double forward: ~1e-7 relative rounding per op over a few dozen ops per value.
  EXPECT_NEAR(loss, reference.loss(theta, epoch, true), 1e-5 * std::max(1.0, std::abs(loss)));

  // Central differences in double with h = 1e-6: truncation error O(h^2) ~ 1e-12 and rounding ~ 1e-16/h ~ 1e-10,
  // both far below the tolerance; a relu kink inside [-h, h] is improbable at this h. The tolerance is set by
  // the engine's float gradients: 1e-4 of the largest gradient (float accumulations of a few hundred terms).
  std::vector<double> numeric(theta.size());
  double largest = 0;
  for (size_t i = 0; i < theta.size(); ++i) {
    const double h = 1e-6, saved = theta[i];
    theta[i] = saved + h;
    const double up = reference.loss(theta, epoch, true);
    theta[i] = saved - h;
    const double down = reference.loss(theta, epoch, true);
    theta[i] = saved;
    numeric[i] = (up - down) / (2 * h);
    largest = std::max(largest, std::abs(numeric[i]));
  }
  ASSERT_GT(largest, 1e-3) << "gradients vanish: the test would prove nothing";
  for (int k = 0; k < store.count(); ++k) {
    const nn::ParameterInfo& p = store.info(k);
    for (int64_t e = 0; e < p.size(); ++e) {
      const int64_t i = p.offset + e;
      EXPECT_NEAR(grads[i], numeric[i], 1e-4 * largest) << p.name << " element " << e;
    }
  }
}

TEST(ModelGradient, GcnOneLayerTransformFirst) { check_gradients({nn::ConvKind::gcn, 1, 0, 0.5f}); }
TEST(ModelGradient, GcnTwoLayersBothOrderings) { check_gradients({nn::ConvKind::gcn, 2, 8, 0.5f}); }
TEST(ModelGradient, GcnThreeLayersNoDropout) { check_gradients({nn::ConvKind::gcn, 3, 4, 0.0f}); }
TEST(ModelGradient, GcnSparseInputFeatures) { check_gradients({nn::ConvKind::gcn, 2, 8, 0.5f, true}); }
TEST(ModelGradient, GcnSparseFirstLayerTransformFirst) { check_gradients({nn::ConvKind::gcn, 2, 4, 0.5f, true}); }
TEST(ModelGradient, SageSparseFirstLayerTransformFirst) { check_gradients({nn::ConvKind::sage, 2, 4, 0.5f, true}); }
TEST(ModelGradient, SageOneLayerTransformFirst) { check_gradients({nn::ConvKind::sage, 1, 0, 0.5f}); }
TEST(ModelGradient, SageTwoLayersBothOrderings) { check_gradients({nn::ConvKind::sage, 2, 8, 0.5f}); }
TEST(ModelGradient, SageThreeLayersNoDropout) { check_gradients({nn::ConvKind::sage, 3, 4, 0.0f}); }

// GIN: hidden 8 > 6 features: layer 0 aggregates first, layer 1 (8 -> MLP 8 -> 3) too; hidden 4 < 6: layer 0
// transforms first (exchanges X W). Learned eps (set to 0.05 like the biases) checks d eps.
TEST(ModelGradient, GinTwoLayersAggregateFirstFixedEps) {
  check_gradients({nn::ConvKind::gin, 2, 8, 0.5f});
}
TEST(ModelGradient, GinTwoLayersTransformFirstLearnedEps) {
  check_gradients({nn::ConvKind::gin, 2, 4, 0.5f, false, false, true});
}
TEST(ModelGradient, GinAggregateFirstLearnedEps) {
  check_gradients({nn::ConvKind::gin, 2, 8, 0.0f, false, false, true});
}
TEST(ModelGradient, GinSparseFirstLayerLearnedEps) {
  check_gradients({nn::ConvKind::gin, 2, 4, 0.5f, true, false, true});
}
TEST(ModelGradient, GinOneLayer) {
  check_gradients({nn::ConvKind::gin, 1, 5, 0.0f, false, false, true});
}
// APPNP: the MLP (2 linear layers) then K steps; alpha 0.2 and K = 3 keep every term visible in the gradient.
TEST(ModelGradient, AppnpTwoLayersThreeSteps) {
  check_gradients({nn::ConvKind::appnp, 2, 8, 0.5f, false, false, false, 3, 0.2f});
}
TEST(ModelGradient, AppnpSparseFirstLayer) {
  check_gradients({nn::ConvKind::appnp, 2, 4, 0.5f, true, false, false, 2, 0.1f});
}
TEST(ModelGradient, AppnpNoPropagation) {
  check_gradients({nn::ConvKind::appnp, 2, 8, 0.0f, false, false, false, 0, 0.1f});
}
TEST(ModelGradient, AppnpOneStepAlphaOne) {
  check_gradients({nn::ConvKind::appnp, 1, 0, 0.0f, false, false, false, 1, 1.0f});
}
// Weighted edges: GCN (weighted degrees, self-loops of weight 1), SAGE's weighted mean, GIN's weighted sum,
// APPNP.
TEST(ModelGradient, GcnWeightedEdges) {
  check_gradients({nn::ConvKind::gcn, 2, 8, 0.5f, false, true});
}
TEST(ModelGradient, SageWeightedEdges) {
  check_gradients({nn::ConvKind::sage, 2, 4, 0.5f, false, true});
}
TEST(ModelGradient, GinWeightedEdges) {
  check_gradients({nn::ConvKind::gin, 2, 4, 0.5f, false, true, true});
}
TEST(ModelGradient, AppnpWeightedEdges) {
  check_gradients({nn::ConvKind::appnp, 2, 8, 0.5f, false, true, false, 3, 0.2f});
}

// GAT: multi-head attention (hidden heads concatenated, then ELU + dropout; output heads averaged), attention
// dropout (the engine's per-edge keys, which the reference draws itself), the isolated vertex (a self-loop only).
// 5 heads: one full group of four dropout words and one partial group.
TEST(ModelGradient, GatTwoLayersConcatThenMean) {
  Case c{nn::ConvKind::gat, 2, 3, 0.5f};
  c.gat_heads = 5;
  c.gat_output_heads = 2;
  c.attention_dropout = 0.4f;
  check_gradients(c);
}
TEST(ModelGradient, GatNoDropoutOneOutputHead) {
  Case c{nn::ConvKind::gat, 2, 4, 0.0f};
  c.gat_heads = 2;
  check_gradients(c);
}
TEST(ModelGradient, GatOneLayerAveragedHeads) {
  Case c{nn::ConvKind::gat, 1, 0, 0.3f};
  c.gat_output_heads = 3;
  c.attention_dropout = 0.5f;
  check_gradients(c);
}
// --gat-dropout pyg: one input mask for all heads and dropout after the hidden ELU (the tests above drop per
// head inside the layers: the default).
TEST(ModelGradient, GatPygDropoutConcatThenMean) {
  Case c{nn::ConvKind::gat, 2, 3, 0.5f};
  c.gat_heads = 5;
  c.gat_output_heads = 2;
  c.attention_dropout = 0.4f;
  c.gat_per_head_dropout = false;
  check_gradients(c);
}
TEST(ModelGradient, GatPygDropoutSparseInput) {
  Case c{nn::ConvKind::gat, 2, 2, 0.5f, true};
  c.gat_heads = 3;
  c.gat_per_head_dropout = false;
  check_gradients(c);
}
// Sparse input without dropout: layer 0's products use the model's (undropped) nonzeros and their transpose.
TEST(ModelGradient, GatSparseInputNoDropout) {
  Case c{nn::ConvKind::gat, 2, 3, 0.0f, true};
  c.gat_heads = 2;
  c.attention_dropout = 0.3f;
  check_gradients(c);
}
TEST(ModelGradient, GatThreeLayersSparseInput) {
  Case c{nn::ConvKind::gat, 3, 2, 0.5f, true};
  c.gat_heads = 3;
  c.attention_dropout = 0.3f;
  check_gradients(c);
}

// GCNII: 3 convolutions (theta_1..3 = log(lambda / l + 1) all distinct), every term visible: alpha 0.2 (the
// initial residual and the propagation both carry gradient), dropout on every one of its L + 2 masks; and
// without dropout or with less of it, alpha 0 (no initial residual) and alpha 1 (no propagation: s = h_0).
Case gcnii(int layers, int64_t hidden, float dropout, float alpha, float lambda) {
  Case c{nn::ConvKind::gcn, layers, hidden, dropout};
  c.model = "gcnii";
  c.values = {{"alpha", alpha}, {"lambda", lambda}, {"conv-weight-decay", 0.01f}};
  return c;
}
TEST(ModelGradient, GcniiThreeLayers) { check_gradients(gcnii(3, 4, 0.5f, 0.2f, 1.0f)); }
TEST(ModelGradient, GcniiNoDropoutAlphaZero) { check_gradients(gcnii(2, 5, 0.0f, 0.0f, 0.5f)); }
TEST(ModelGradient, GcniiAlphaOneOneLayer) { check_gradients(gcnii(1, 4, 0.3f, 1.0f, 2.0f)); }

}  // namespace
}  // namespace halogen
