// Temporal models on P ranks reproduce the one-rank run: every rank builds the same small temporal graph in
// memory, takes its shard under an irregular assignment and trains with MpiComm; every rank also trains the
// whole graph alone (SelfComm). Per-epoch losses and the final metrics must agree (relative 1e-5), for every
// model and task, with BPTT windows shorter than the sequence (state carried across windows).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <string>
#include <tuple>

#include "comm/mpi_comm.h"
#include "comm/self_comm.h"
#include "core/error.h"
#include "dynamic/temporal_config.h"
#include "dynamic/temporal_shards.h"
#include "train/trainer.h"

namespace halogen {
namespace {

std::vector<int32_t> scattered_assignment(int64_t n, int32_t parts) {
  std::vector<int32_t> part_of(n);
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 2654435761u >> 7) % parts);
  return part_of;
}

train::TrainResult train(comm::Communicator& comm, const graph::Graph& g, const std::vector<int32_t>& part_of,
                              nn::TemporalKind model, train::TaskKind task) {
  const graph::Shard shard = testing::temporal_shard(g, part_of, comm.size(), comm.rank(), /*link_negatives=*/2,
                                                     /*link_seed=*/4);
  const train::TemporalTrainConfig config = testing::small_temporal_config(model, task);
  train::Trainer trainer(comm, shard, config);
  return trainer.run();
}

void expect_close(double a, double b, const std::string& what) {
  EXPECT_LE(std::fabs(a - b), 1e-5 * std::max(1.0, std::fabs(b))) << what << ": " << a << " vs " << b;
}

class TemporalInvariance
    : public ::testing::TestWithParam<std::tuple<nn::TemporalKind, train::TaskKind>> {};

TEST_P(TemporalInvariance, PRanksReproduceOneRank) {
  const auto [model, task] = GetParam();
  comm::MpiComm comm;
  graph::Graph g = testing::small_temporal_graph(60, 7, 4, 9);
  testing::add_series(g);
  const std::vector<int32_t> part_of = scattered_assignment(g.num_nodes, comm.size());
  const std::vector<int32_t> one_part(g.num_nodes, 0);
  comm::SelfComm self;
  train::TrainResult reference;
  try {
    reference = train(self, g, one_part, model, task);
  } catch (const UserError& e) {
    if (std::string(e.what()).find("not built yet") != std::string::npos) GTEST_SKIP() << e.what();
    throw;
  }
  const train::TrainResult result = train(comm, g, part_of, model, task);
  ASSERT_EQ(result.epochs.size(), reference.epochs.size());
  for (size_t e = 0; e < result.epochs.size(); ++e) {
    expect_close(result.epochs[e].loss, reference.epochs[e].loss, "loss of epoch " + std::to_string(e + 1));
  }
  ASSERT_EQ(result.final_metrics.size(), reference.final_metrics.size());
  for (const auto& [name, value] : reference.final_metrics) expect_close(result.final_metrics.at(name), value, name);
  for (const auto& [name, value] : reference.baselines) expect_close(result.baselines.at(name), value, name);
  EXPECT_GT(reference.epochs.front().loss, 0.0);
}

INSTANTIATE_TEST_SUITE_P(
    AllModelsAndTasks, TemporalInvariance,
    ::testing::Combine(::testing::Values(nn::TemporalKind::tgcn, nn::TemporalKind::evolvegcn_o,
                                         nn::TemporalKind::gconvgru),
                       ::testing::Values(train::TaskKind::regression, train::TaskKind::link,
                                         train::TaskKind::node)),
    [](const auto& info) {
      std::string name = std::string(nn::temporal_kind_name(std::get<0>(info.param))) + "_" +
                         train::task_kind_name(std::get<1>(info.param));
      for (char& c : name) if (c == '-') c = '_';
      return name;
    });

}  // namespace
}  // namespace halogen
