// GConvGRU on P ranks reproduces the one-rank run: every rank builds the same small temporal graph in memory,
// takes its shard under an irregular assignment and runs two BPTT windows (state carried between them; the
// first prefetched) with MpiComm; every rank also runs the whole graph alone (SelfComm). Outputs of every step
// (owned rows, by global id) and the allreduced parameter gradients of each window must agree (relative 1e-5).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/self_comm.h"
#include "core/rng.h"
#include "nn/snapshot_sequence.h"
#include "nn/temporal_model.h"
#include "dynamic/temporal_shards.h"

namespace halogen {
namespace {

constexpr int64_t kSteps = 6, kWindow = 3, kIn = 3, kHidden = 5, kOut = 2;

std::vector<int32_t> scattered_assignment(int64_t n, int32_t parts) {
  std::vector<int32_t> part_of(n);
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 2654435761u >> 7) % parts);
  return part_of;
}

// Entry c of global vertex v at step t (inputs: stream t, loss weights: stream 100 + t).
float value(uint64_t stream, int64_t v, int64_t c, int64_t width) {
  return 2.0f * static_cast<float>(rng::uniform(13, stream, static_cast<uint64_t>(v * width + c))) - 1.0f;
}

struct RunResult {
  std::vector<std::vector<float>> outputs;  // per step, (N, out) by global id (only owned rows filled)
  std::vector<std::vector<float>> grads;    // per window, allreduced
  int64_t bytes_sent = 0;
};

RunResult run(comm::Communicator& comm, const graph::Graph& g, const std::vector<int32_t>& part_of, int cheb_k) {
  const graph::Shard shard = testing::temporal_shard(g, part_of, comm.size(), comm.rank());
  nn::TemporalModelConfig config;
  config.kind = nn::TemporalKind::gconvgru;
  config.in = kIn;
  config.hidden = kHidden;
  config.out = kOut;
  config.cheb_k = cheb_k;
  config.max_window = kWindow;
  config.seed = 21;
  const int64_t n = shard.num_owned(), N = g.num_nodes;
  auto model = nn::make_temporal_model(config, n);
  nn::SnapshotSequence seq(comm, shard, nn::temporal_normalization(config.kind),
                                nn::temporal_max_width(config));
  std::vector<std::vector<float>> xs(kSteps, std::vector<float>(n * kIn)), rs = xs;
  for (int64_t t = 0; t < kSteps; ++t) {
    rs[t].resize(n * kOut);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < kIn; ++c) xs[t][r * kIn + c] = value(t, shard.owned_gid[r], c, kIn);
      for (int64_t c = 0; c < kOut; ++c) rs[t][r * kOut + c] = value(100 + t, shard.owned_gid[r], c, kOut);
    }
  }
  RunResult result;
  std::vector<float> y(n * kOut);
  nn::ParameterStore& store = model->store();
  model->reset_state();
  for (int64_t t0 = 0; t0 < kSteps; t0 += kWindow) {
    model->begin_window();
    store.zero_grads();
    if (t0 == 0) {
      std::vector<int64_t> snapshots;
      std::vector<Matrix<const float>> inputs;
      for (int64_t t = t0; t < t0 + kWindow; ++t) {
        snapshots.push_back(t);
        inputs.push_back(Matrix<const float>{xs[t].data(), n, kIn, kIn});
      }
      model->prefetch(seq, snapshots, inputs);
    }
    for (int64_t t = t0; t < t0 + kWindow; ++t) {
      model->forward(seq, t, Matrix<const float>{xs[t].data(), n, kIn, kIn}, Matrix<float>{y.data(), n, kOut, kOut},
                     true);
      result.outputs.emplace_back(N * kOut, 0.0f);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < kOut; ++c) result.outputs.back()[shard.owned_gid[r] * kOut + c] = y[r * kOut + c];
    }
    for (int64_t t = t0 + kWindow - 1; t >= t0; --t)
      model->backward(seq, t, Matrix<const float>{rs[t].data(), n, kOut, kOut});
    comm.allreduce_sum(store.grads().data(), store.total_size(), nullptr);
    result.grads.emplace_back(store.grads().data(), store.grads().data() + store.total_size());
  }
  // Every rank's outputs in every rank's copy (each global row is owned by exactly one rank).
  for (auto& out : result.outputs) comm.allreduce_sum(out.data(), static_cast<int64_t>(out.size()), nullptr);
  double sent = static_cast<double>(seq.bytes_sent());
  comm.allreduce_sum(&sent, 1);
  result.bytes_sent = static_cast<int64_t>(sent);
  return result;
}

class GConvGruRanks : public ::testing::TestWithParam<int> {};

TEST_P(GConvGruRanks, PRanksReproduceOneRankOutputsAndGradients) {
  const int cheb_k = GetParam();
  comm::MpiComm comm;
  const graph::Graph g = testing::small_temporal_graph(60, kSteps, 4, 9);
  const std::vector<int32_t> part_of = scattered_assignment(g.num_nodes, comm.size());
  comm::SelfComm self;
  const RunResult reference = run(self, g, std::vector<int32_t>(g.num_nodes, 0), cheb_k);
  const RunResult result = run(comm, g, part_of, cheb_k);
  // Float sums in a different order (partial products per rank, allreduce): ~1e-7 relative per entry.
  auto close = [](float a, float b) { return std::fabs(a - b) <= 1e-5 * std::max(1.0f, std::fabs(b)); };
  ASSERT_EQ(result.outputs.size(), reference.outputs.size());
  for (size_t t = 0; t < reference.outputs.size(); ++t)
    for (size_t i = 0; i < reference.outputs[t].size(); ++i)
      ASSERT_TRUE(close(result.outputs[t][i], reference.outputs[t][i]))
          << "step " << t << " entry " << i << ": " << result.outputs[t][i] << " vs " << reference.outputs[t][i];
  ASSERT_EQ(result.grads.size(), reference.grads.size());
  double norm = 0;
  for (size_t w = 0; w < reference.grads.size(); ++w)
    for (size_t i = 0; i < reference.grads[w].size(); ++i) {
      ASSERT_TRUE(close(result.grads[w][i], reference.grads[w][i]))
          << "window " << w << " gradient entry " << i << ": " << result.grads[w][i] << " vs " << reference.grads[w][i];
      norm += std::fabs(reference.grads[w][i]);
    }
  EXPECT_GT(norm, 1e-3);
  // K = 1 has no neighbour terms, hence no exchange; K > 1 exchanges H's halo rows every step.
  if (cheb_k == 1) {
    EXPECT_EQ(result.bytes_sent, 0);
  } else {
    EXPECT_GT(result.bytes_sent, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(ChebyshevTerms, GConvGruRanks, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace halogen
