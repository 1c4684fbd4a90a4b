// BF16 halo messages over MPI (run with -np 2 and 4): the BF16 forward exchange delivers exactly the FP32
// exchange's halo rows rounded to BF16, in half the bytes; the BF16 reverse exchange adds exactly what the
// FP32 one adds when its partial sums are rounded to BF16 first; and DistributedAdjacency's BF16 forward and
// transpose on P ranks equal its one-rank BF16 products (the FP32 parity test's tolerance), and its memory
// estimate counts the BF16 buffer exactly. Every rank builds the same graph and takes its shard under an
// irregular assignment (with 3+ ranks the last one owns only an isolated vertex: no halo).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "comm/halo_exchange.h"
#include "comm/mpi_comm.h"
#include "comm/self_comm.h"
#include "core/bf16.h"
#include "graph/local_graph.h"
#include "nn/distributed_adjacency.h"
#include "train/synthetic_graph.h"

namespace halogen::comm {
namespace {

constexpr int64_t kNodes = 90, kIsolated = 11;

std::vector<int32_t> assignment(int32_t parts) {
  std::vector<int32_t> part_of(kNodes);
  const int32_t regular = parts >= 3 ? parts - 1 : parts;
  for (int64_t v = 0; v < kNodes; ++v)
    part_of[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 2654435761u >> 7) % regular);
  part_of[kIsolated] = parts - 1;
  return part_of;
}

// Not representable in BF16 (so rounding matters), different per vertex and column.
float input_value(int64_t gid, int64_t c, int salt) {
  return 0.1f * static_cast<float>((gid * 5 + c * 3 + salt * 7) % 13) - 0.6f +
         1e-3f * static_cast<float>(gid % 7);
}

TEST(HaloExchangeBf16, ForwardDeliversTheFp32RowsRoundedInHalfTheBytes) {
  MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(kNodes, 4, 3, 3, 17, kIsolated);
  const graph::Shard s = testing::make_shard(g, assignment(P), P, rank);
  const int64_t n = s.num_owned(), h = s.num_halo();
  for (int64_t f : {5, 8}) {  // odd: a padded stride of 6
    SCOPED_TRACE(::testing::Message() << "rank " << rank << " width " << f);
    const int64_t stride = HaloExchange::bf16_stride(f);
    HaloExchange fp32(comm, s.plan, n, f), bf16(comm, s.plan, n, f);
    Tensor x(n + h, f, Device::cpu);
    Buffer<Bf16> xb(n + h, stride, Device::cpu);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < f; ++c) {
        x[r * f + c] = input_value(s.owned_gid[r], c, 0);
        xb[r * stride + c] = to_bf16(x[r * f + c]);
      }
    fp32.start_forward(x.matrix());
    fp32.finish_forward();
    bf16.start_forward(Matrix<Bf16>{xb.data(), n + h, f, stride, Device::cpu});
    bf16.finish_forward();
    int64_t wrong = 0;
    for (int64_t r = n; r < n + h; ++r)
      for (int64_t c = 0; c < f; ++c) wrong += xb[r * stride + c].bits != to_bf16(x[r * f + c]).bits;
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(fp32.stats().bytes_sent, fp32.num_send() * f * 4);
    EXPECT_EQ(bf16.stats().bytes_sent, bf16.num_send() * stride * 2);
    if (f % 2 == 0) {
      EXPECT_EQ(2 * bf16.stats().bytes_sent, fp32.stats().bytes_sent);
    }
  }
}

TEST(HaloExchangeBf16, ReverseAddsTheFp32SumsOfRoundedPartials) {
  MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(kNodes, 4, 3, 3, 17, kIsolated);
  const graph::Shard s = testing::make_shard(g, assignment(P), P, rank);
  const int64_t n = s.num_owned(), h = s.num_halo();
  for (int64_t f : {3, 16}) {
    SCOPED_TRACE(::testing::Message() << "rank " << rank << " width " << f);
    const int64_t stride = HaloExchange::bf16_stride(f);
    HaloExchange fp32(comm, s.plan, n, f), bf16(comm, s.plan, n, f);
    Tensor rounded(h, f, Device::cpu), grad_a(n, f, Device::cpu), grad_b(n, f, Device::cpu);
    Buffer<Bf16> partial(h, stride, Device::cpu);
    for (int64_t r = 0; r < h; ++r)
      for (int64_t c = 0; c < f; ++c) {
        const float value = input_value(s.halo_gid[r], c, 1 + rank);
        partial[r * stride + c] = to_bf16(value);
        rounded[r * f + c] = round_to_bf16(value);
      }
    for (int64_t i = 0; i < n * f; ++i) grad_a[i] = grad_b[i] = input_value(i, 0, 2);
    fp32.start_reverse(rounded.matrix());
    fp32.finish_reverse(grad_a.matrix());
    bf16.start_reverse(Matrix<const Bf16>{partial.data(), h, f, stride, Device::cpu});
    bf16.finish_reverse(grad_b.matrix());
    EXPECT_EQ(0, std::memcmp(grad_a.data(), grad_b.data(), grad_a.bytes()));
    if (f % 2 == 0) {
      EXPECT_EQ(2 * bf16.stats().bytes_sent, fp32.stats().bytes_sent);
    }
  }
}

// DistributedAdjacency in BF16: forward_bf16 and the transpose with BF16 messages on P ranks against one
// rank.
std::vector<std::vector<float>> bf16_products(Communicator& comm, const graph::Shard& s, bool overlap) {
  constexpr int64_t f = 5;
  const int64_t n = s.num_owned(), h = s.num_halo(), stride = HaloExchange::bf16_stride(f);
  std::vector<std::vector<float>> results;
  for (graph::Normalization norm : {graph::Normalization::gcn, graph::Normalization::mean}) {
    nn::DistributedAdjacency a(comm, graph::build_local_graph(s, norm), s.plan, f, Device::cpu, nullptr,
                               true);
    a.set_overlap(overlap);
    Buffer<Bf16> x(n + h, stride, Device::cpu);
    Tensor g(n, f, Device::cpu), out(n, f, Device::cpu);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < f; ++c) {
        x[r * stride + c] = to_bf16(input_value(s.owned_gid[r], c, 0));
        g[r * f + c] = input_value(s.owned_gid[r], c, 1);
      }
    a.forward_bf16(Matrix<Bf16>{x.data(), n + h, f, stride, Device::cpu}, out.matrix());
    results.emplace_back(out.data(), out.data() + out.size());
    a.transpose(g.matrix(), out.matrix());
    results.emplace_back(out.data(), out.data() + out.size());
  }
  return results;
}

TEST(DistributedAdjacencyBf16, RanksReproduceTheOneRankProduct) {
  MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(kNodes, 4, 3, 3, 17, kIsolated);
  const graph::Shard whole = testing::whole_graph_shard(g);
  const graph::Shard mine = testing::make_shard(g, assignment(P), P, rank);
  SelfComm self;
  const std::vector<std::vector<float>> reference = bf16_products(self, whole, true);
  for (bool overlap : {true, false}) {
    const std::vector<std::vector<float>> distributed = bf16_products(comm, mine, overlap);
    ASSERT_EQ(distributed.size(), reference.size());
    int64_t wrong = 0;
    for (size_t k = 0; k < reference.size(); ++k)
      for (int64_t r = 0; r < mine.num_owned(); ++r)
        for (int64_t c = 0; c < 5; ++c) {
          const float expected = reference[k][mine.owned_gid[r] * 5 + c];
          const float got = distributed[k][r * 5 + c];
          // forward: the same BF16 inputs, only the summation order differs (as in the FP32 parity test: rows
          // of <= ~15 terms of size <= 1 agree to a few ulps; 1e-5 leaves ~100 ulps). transpose: the halo
          // columns' partial sums are rounded to BF16 on the wire (relative 2^-9 of a sum of <= ~15 terms of
          // size <= 1), which the one-rank product does not do: 2^-9 * 15 = 0.03.
          const float tolerance = k % 2 == 0 ? 1e-5f : 0.03f;
          if (!(std::abs(got - expected) <= tolerance)) {
            if (wrong < 5)
              ADD_FAILURE() << "rank " << rank << " product " << k << " vertex " << mine.owned_gid[r]
                            << " column " << c << ": " << got << " vs " << expected << " (overlap " << overlap
                            << ")";
            ++wrong;
          }
        }
    EXPECT_EQ(wrong, 0);
  }
}

// The BF16 partial-sum buffer is in the adjacency's memory estimate (exchange_bytes_for with bf16_messages), on
// ranks that have halo rows (and, with 3+ ranks, on one that has none).
TEST(DistributedAdjacencyBf16, BytesForIsTheAllocation) {
  MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(kNodes, 4, 3, 3, 17, kIsolated);
  const graph::Shard s = testing::make_shard(g, assignment(P), P, rank);
  constexpr int64_t kWidth = 7;
  for (bool bf16 : {false, true}) {
    const graph::LocalGraph lg = graph::build_local_graph(s, graph::Normalization::gcn);
    const int64_t before = detail::bytes_in_use(Device::cpu);
    nn::DistributedAdjacency adjacency(comm, lg, s.plan, kWidth, Device::cpu, nullptr, bf16);
    const int64_t allocated = detail::bytes_in_use(Device::cpu) - before;
    const nn::ValueLayout layout = nn::value_layout_of(graph::Normalization::gcn, false);
    EXPECT_EQ(allocated, nn::DistributedAdjacency::matrix_bytes_for(lg.num_owned, lg.num_halo,
                                                                    lg.a_own.nnz() + lg.a_halo.nnz(), lg.a_halo.nnz(),
                                                                    lg.a_own_symmetric, layout, Device::cpu) +
                             nn::DistributedAdjacency::exchange_bytes_for(lg.num_halo, s.plan.num_send(), kWidth,
                                                                          bf16))
        << "rank " << rank << " bf16 " << bf16;
  }
}

}  // namespace
}  // namespace halogen::comm
