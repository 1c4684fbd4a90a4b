// nn::DistributedAdjacency over MPI: P ranks (run with -np 2 and 4) give the one-rank product, row by row, for
// S x, S^T g and the pipelined many-steps forward, with overlap on and off. Every rank builds the same small
// graph, takes its shard under an irregular assignment (with 3+ ranks the last one owns only an isolated vertex:
// no halo, an empty mean row) and also computes the whole graph alone (SelfComm) as the reference. The
// *_overwriting products (the input's rows scaled by the column factor first; the halo rows arrive scaled by
// their owners) equal forward and transpose bit for bit on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/self_comm.h"
#include "graph/local_graph.h"
#include "nn/distributed_adjacency.h"
#include "train/synthetic_graph.h"

namespace halogen::nn {
namespace {

constexpr int64_t kNodes = 90, kIsolated = 11, kWidth = 4;

std::vector<int32_t> assignment(int32_t parts) {
  std::vector<int32_t> part_of(kNodes);
  const int32_t regular = parts >= 3 ? parts - 1 : parts;
  for (int64_t v = 0; v < kNodes; ++v)
    part_of[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 2654435761u >> 7) % regular);
  part_of[kIsolated] = parts - 1;
  return part_of;
}

float input_value(int64_t gid, int64_t c, int salt) {
  return 0.1f * static_cast<float>((gid * 5 + c * 3 + salt * 7) % 13) - 0.6f;
}

// Rows of one shard's results: forward and transpose per normalisation, then 3 pipelined steps (gcn, mean, gcn).
std::vector<std::vector<float>> products(comm::Communicator& comm, const graph::Shard& s, bool overlap) {
  const int64_t n = s.num_owned(), h = s.num_halo(), f = kWidth;
  DistributedAdjacency gcn(comm, graph::build_local_graph(s, graph::Normalization::gcn), s.plan, f, Device::cpu);
  DistributedAdjacency mean(comm, graph::build_local_graph(s, graph::Normalization::mean), s.plan, f, Device::cpu);
  gcn.set_overlap(overlap);
  mean.set_overlap(overlap);
  auto fill = [&](Matrix<float> x, int salt) {
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < f; ++c) x(r, c) = input_value(s.owned_gid[r], c, salt);
  };
  std::vector<std::vector<float>> results;
  Tensor x(n + h, f, Device::cpu), out(n, f, Device::cpu);
  auto keep = [&] { results.emplace_back(out.data(), out.data() + out.size()); };
  auto same_as_last = [&](const char* what) {  // bitwise: the same products, the factor applied earlier
    const std::vector<float>& kept = results.back();
    int64_t differ = 0;
    for (int64_t i = 0; i < out.size(); ++i) differ += std::memcmp(&kept[i], out.data() + i, sizeof(float)) != 0;
    EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << out.size() << " values differ (rank " << comm.rank()
                         << ", overlap " << overlap << ")";
  };
  for (DistributedAdjacency* a : {&gcn, &mean}) {
    fill(x.matrix(), 0);
    a->forward(x.matrix(), out.matrix());
    keep();
    fill(x.matrix(), 0);
    a->forward_overwriting(x.matrix(), out.matrix());
    same_as_last(a == &gcn ? "gcn forward_overwriting" : "mean forward_overwriting");
    fill(x.matrix(), 1);
    a->transpose(x.matrix().slice_rows(0, n), out.matrix());
    keep();
    fill(x.matrix(), 1);
    a->transpose_overwriting(x.matrix().slice_rows(0, n), out.matrix());
    same_as_last(a == &gcn ? "gcn transpose_overwriting" : "mean transpose_overwriting");
  }
  std::vector<Tensor> buffers, outputs;
  std::vector<Matrix<float>> out_views;
  for (int i = 0; i < 2; ++i) buffers.emplace_back(n + h, f, Device::cpu);
  for (int i = 0; i < 3; ++i) outputs.emplace_back(n, f, Device::cpu);
  for (Tensor& o : outputs) out_views.push_back(o.matrix());
  forward_pipelined({&gcn, &mean, &gcn}, [&](int64_t i) {
    Matrix<float> xi = buffers[i % 2].matrix();
    fill(xi, static_cast<int>(i) + 2);
    return xi;
  }, out_views);
  for (Tensor& o : outputs) results.emplace_back(o.data(), o.data() + o.size());
  return results;
}

TEST(DistributedAdjacency, RanksReproduceTheOneRankProduct) {
  comm::MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(kNodes, 4, 3, 3, 17, kIsolated);
  const graph::Shard whole = testing::whole_graph_shard(g);
  const graph::Shard mine = testing::make_shard(g, assignment(P), P, rank);
  if (P >= 3 && rank == P - 1) {
    EXPECT_EQ(mine.owned_gid, std::vector<int64_t>{kIsolated});
    EXPECT_EQ(mine.num_halo(), 0);
  }
  comm::SelfComm self;
  for (bool overlap : {true, false}) {
    const std::vector<std::vector<float>> reference = products(self, whole, true);
    const std::vector<std::vector<float>> distributed = products(comm, mine, overlap);
    ASSERT_EQ(distributed.size(), reference.size());
    int64_t wrong = 0;
    for (size_t k = 0; k < reference.size(); ++k)
      for (int64_t r = 0; r < mine.num_owned(); ++r)
        for (int64_t c = 0; c < kWidth; ++c) {
          const float expected = reference[k][mine.owned_gid[r] * kWidth + c];
          const float got = distributed[k][r * kWidth + c];
          // Only the summation order differs (owned and halo columns are summed apart): rows of <= ~15 terms of
          // size <= 1 agree to a few ulps; 1e-5 leaves a margin of ~100 ulps.
          if (!(std::abs(got - expected) <= 1e-5f)) {
            if (wrong < 5)
              ADD_FAILURE() << "rank " << rank << " product " << k << " vertex " << mine.owned_gid[r] << " column "
                            << c << ": " << got << " vs " << expected << " (overlap " << overlap << ")";
            ++wrong;
          }
        }
    EXPECT_EQ(wrong, 0);
  }
}

}  // namespace
}  // namespace halogen::nn
