// Trainer behaviour on one rank (SelfComm) (checkpoint files: train_checkpoint_test.cpp): early
// stopping, the NaN stop naming epoch and layer, and the --metrics JSON lines contract.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "comm/self_comm.h"
#include "core/error.h"
#include "train/synthetic_graph.h"
#include "train/trainer.h"
#include "temp_dir_util.h"

namespace halogen {
namespace {

std::string temp_dir(const std::string& name) { return halogen::test::fresh_temp_subdir("trainer_test", name); }

train::TrainConfig small_config() {
  train::TrainConfig config;
  config.model.layers = 2;
  config.model.hidden = 8;
  config.model.seed = 1;
  config.epochs = 30;
  config.print_epochs = false;
  return config;
}

TEST(Trainer, AllocatesNoBufferDuringTraining) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  train::TrainConfig config = small_config();
  config.epochs = 5;
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  const int64_t in_use = detail::bytes_in_use(Device::cpu);
  const int64_t peak = detail::peak_bytes(Device::cpu);
  ASSERT_EQ(in_use, peak) << "the trainer's buffers should be the largest allocation so far";
  const train::TrainResult result = trainer.run();
  // Any Buffer allocated inside the loop (even freed again) would raise the peak.
  EXPECT_EQ(detail::peak_bytes(Device::cpu), peak);
  EXPECT_EQ(detail::bytes_in_use(Device::cpu), in_use);
  EXPECT_EQ(result.allocated_bytes, in_use);
  EXPECT_EQ(result.estimated_bytes, in_use) << "train::estimate_rank_memory must predict the allocation";
}

TEST(Trainer, EarlyStoppingAfterPatienceEvaluationsWithoutImprovement) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  train::TrainConfig config = small_config();
  config.lr = 0.0f;  // nothing changes: the first evaluation stays the best
  config.model.dropout = 0.0f;
  config.patience = 3;
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  const train::TrainResult result = trainer.run();
  EXPECT_TRUE(result.stopped_early);
  EXPECT_EQ(result.best_epoch, 1);
  EXPECT_EQ(result.last_epoch, 4);  // evaluations 2, 3, 4 without improvement
}

// --best-by loss: the best epoch is the one of the lowest valid_loss (strictly lower: the first of equals), its
// figures are that epoch's, and --patience counts evaluations since it; --best-by acc (the default) keeps the
// highest valid_acc.
TEST(Trainer, BestByLossKeepsTheEpochOfTheLowestValidationLoss) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  int64_t best_epochs[2] = {0, 0};
  for (const bool by_loss : {false, true}) {
    SCOPED_TRACE(by_loss ? "loss" : "acc");
    comm::SelfComm comm;
    train::TrainConfig config = small_config();
    config.epochs = 40;
    config.lr = 0.05f;
    config.best_by_loss = by_loss;
    train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
    const train::TrainResult result = trainer.run();
    ASSERT_EQ(result.epochs.size(), 40u);
    const train::EpochRecord* best = nullptr;
    for (const train::EpochRecord& r : result.epochs) {
      ASSERT_TRUE(r.metrics.count("valid_loss"));
      if (best == nullptr || (by_loss ? r.metrics.at("valid_loss") < best->metrics.at("valid_loss")
                                      : r.valid_acc > best->valid_acc))
        best = &r;
    }
    EXPECT_EQ(result.best_epoch, best->epoch);
    EXPECT_EQ(result.best_valid_acc, best->valid_acc);
    EXPECT_EQ(result.test_acc_at_best, best->test_acc);
    EXPECT_EQ(result.best_valid_loss, by_loss ? best->metrics.at("valid_loss") : 0.0);
    best_epochs[by_loss ? 1 : 0] = result.best_epoch;
  }
  EXPECT_NE(best_epochs[0], best_epochs[1]) << "the two rules pick the same epoch here: the test would not tell them apart";
  // Patience by loss: with nothing learned (lr 0) the first evaluation's loss stays the lowest.
  comm::SelfComm comm;
  train::TrainConfig config = small_config();
  config.lr = 0.0f;
  config.model.dropout = 0.0f;
  config.patience = 3;
  config.best_by_loss = true;
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  const train::TrainResult result = trainer.run();
  EXPECT_TRUE(result.stopped_early);
  EXPECT_EQ(result.best_epoch, 1);
  EXPECT_EQ(result.last_epoch, 4);
}

TEST(Trainer, NonFiniteLossStopsNamingEpochAndLayer) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  train::TrainConfig config = small_config();
  config.lr = 1e30f;
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  try {
    trainer.run();
    FAIL() << "training with lr 1e30 did not stop";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("epoch "), std::string::npos) << message;
    EXPECT_NE(message.find("layer "), std::string::npos) << message;
  }
}

TEST(Trainer, MetricsFileHasOneLinePerEvaluationAndAFinalRecord) {
  const graph::Graph g = testing::synthetic_graph(80, 3, 6, 3, 2);
  comm::SelfComm comm;
  const std::string dir = temp_dir("metrics");
  train::TrainConfig config = small_config();
  config.epochs = 10;
  config.eval_every = 3;
  config.metrics_path = dir + "/m.jsonl";
  train::Trainer trainer(comm, testing::whole_graph_shard(g), config);
  const train::TrainResult result = trainer.run();
  std::ifstream in(config.metrics_path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 6u);  // header, epochs 3, 6, 9, 10 (the last is always evaluated), final
  const nlohmann::json header = lines.front();
  lines.erase(lines.begin());
  EXPECT_TRUE(header.contains("config") && header["config"].is_object());
  for (const char* key : {"version", "commit", "hosts", "ranks", "device", "start_time"})
    EXPECT_TRUE(header.contains(key)) << key;
  EXPECT_EQ(header["ranks"], 1);
  EXPECT_EQ(header["device"], "cpu");
  const int64_t expected_epochs[] = {3, 6, 9, 10};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(lines[i]["epoch"], expected_epochs[i]);
    for (const char* key :
         {"loss", "train_acc", "valid_acc", "valid_loss", "test_acc", "epoch_ms", "spmm_ms", "gemm_ms",
          "halo_ms", "halo_exposed_ms", "allreduce_ms", "allreduce_exposed_ms", "other_ms"})
      EXPECT_TRUE(lines[i].contains(key)) << key;
  }
  const nlohmann::json& last = lines.back();
  EXPECT_EQ(last["final"], true);
  EXPECT_EQ(last["best_epoch"], result.best_epoch);
  for (const char* key : {"best_valid_acc", "test_acc_at_best", "mean_epoch_ms"}) EXPECT_TRUE(last.contains(key)) << key;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace halogen
