// GCNII (nn/models/gcnii.cpp) through the model registry: the memory plan of 64 layers is the allocation,
// exactly, and nothing is allocated in the training loop; the weight decay split between the dense layers
// (--weight-decay) and the convolutions (--conv-weight-decay); its options' defaults and validators.
// Gradients: nn_model_gradient_test (ModelGradient.Gcnii*); P ranks = 1 rank:
// mpi_train_partition_invariance_test.
#include <gtest/gtest.h>

#include <vector>

#include "comm/self_comm.h"
#include "core/error.h"
#include "nn/model_registry.h"
#include "train/synthetic_graph.h"
#include "train/trainer.h"

namespace halogen {
namespace {

// 64 convolutions (the paper's Cora depth): the plan (ModelSpec::estimate + Adam) against the bytes the
// trainer holds, and the peak unchanged by 3 epochs of training and evaluation.
TEST(Gcnii, EstimateIsTheAllocationWith64LayersAndNothingIsAllocatedWhileTraining) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2, /*isolated=*/5);
  comm::SelfComm comm;
  train::TrainConfig config;
  config.model = nn::default_model_config("gcnii");
  config.model.layers = 64, config.model.hidden = 16, config.model.dropout = 0.6f, config.model.seed = 1;
  config.epochs = 3, config.print_epochs = false;
  const int64_t before = detail::bytes_in_use(Device::cpu);
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  const int64_t in_use = detail::bytes_in_use(Device::cpu);
  const int64_t peak = detail::peak_bytes(Device::cpu);
  const train::TrainResult result = trainer.run();
  EXPECT_EQ(detail::peak_bytes(Device::cpu), peak) << "a Buffer was allocated in the training loop";
  EXPECT_EQ(result.estimated_bytes, in_use - before);
  EXPECT_EQ(result.estimated_bytes, result.allocated_bytes);
  // The layers dominate: 64 x 2 n H floats (d_l and s_l) of the total.
  EXPECT_GT(result.estimated_bytes, 64 * 2 * 80 * 16 * 4);
}

TEST(Gcnii, WeightDecayDenseLayersAndConvolutions) {
  const nn::ModelSpec& spec = nn::model_spec("gcnii");
  nn::ModelConfig config = nn::default_model_config("gcnii");
  config.layers = 3;  // parameter layers: input, 3 convolutions, output
  const std::vector<float> split = spec.weight_decay(config, 5, 5e-4f, false);
  EXPECT_EQ(split, (std::vector<float>{5e-4f, 0.01f, 0.01f, 0.01f, 5e-4f}));
  spec.options[2].set(config, nn::OptionValue{0.02f});  // --conv-weight-decay 0.02
  EXPECT_EQ(spec.weight_decay(config, 5, 1e-3f, false),
            (std::vector<float>{1e-3f, 0.02f, 0.02f, 0.02f, 1e-3f}));
  EXPECT_EQ(spec.weight_decay(config, 5, 1e-3f, true),
            std::vector<float>(5, 1e-3f));  // --weight-decay-all-layers
}

TEST(Gcnii, OptionsDefaultsAndRanges) {
  const nn::ModelSpec& spec = nn::model_spec("gcnii");
  ASSERT_EQ(spec.options.size(), 3u);
  const nn::ModelConfig config = nn::default_model_config("gcnii");
  EXPECT_EQ(std::get<float>(config.values.at("alpha")), 0.1f);
  EXPECT_EQ(std::get<float>(config.values.at("lambda")), 0.5f);
  EXPECT_EQ(std::get<float>(config.values.at("conv-weight-decay")), 0.01f);
  EXPECT_EQ(*spec.defaults.lr, 0.01f);
  EXPECT_EQ(*spec.defaults.weight_decay, 5e-4f);
  EXPECT_EQ(*spec.defaults.epochs, 1500);
  EXPECT_EQ(*spec.defaults.patience, 100);
  EXPECT_THROW(nn::parse_option(spec.options[0], "1.5", "test"), UserError);  // alpha in [0, 1]
  EXPECT_THROW(nn::parse_option(spec.options[1], "-1", "test"), UserError);   // lambda >= 0
  EXPECT_THROW(nn::parse_option(spec.options[2], "nan", "test"), UserError);
  EXPECT_EQ(std::get<float>(nn::parse_option(spec.options[1], "1.5", "test")), 1.5f);
}

}  // namespace
}  // namespace halogen
