// nn::DistributedAdjacency against a naive dense reference of the whole graph: forward S x and transpose S^T g,
// overlap on and off, extra work overlapped, and the pipelined many-steps forward. P ranks run as threads of
// this process over an in-memory communicator, under an assignment where one rank owns only an isolated vertex
// (no halo, an empty row for the mean operator) and one rank owns nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "comm/communicator.h"
#include "graph/local_graph.h"
#include "nn/distributed_adjacency.h"
#include "train/synthetic_graph.h"

namespace halogen::nn {
namespace {

// P ranks as threads: a send is copied into the (sender, receiver) queue when posted; wait() takes, per receive,
// the oldest message of its pair (the order MPI guarantees between two ranks).
class ThreadComm final : public comm::Communicator {
 public:
  struct Mailbox {
    std::mutex mutex;
    std::condition_variable arrived;
    std::map<std::pair<int, int>, std::deque<std::vector<float>>> queues;
  };
  ThreadComm(Mailbox& mailbox, int rank, int size) : mailbox_(mailbox), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Device device() const override { return Device::cpu; }
  std::unique_ptr<comm::Request> start_exchange(const std::vector<comm::Message>& sends,
                                                const std::vector<comm::Message>& receives,
                                                kernels::Stream) override {
    {
      std::lock_guard<std::mutex> lock(mailbox_.mutex);
      for (const comm::Message& m : sends)
        mailbox_.queues[{rank_, m.peer}].emplace_back(m.data, m.data + m.count);
    }
    mailbox_.arrived.notify_all();
    auto request = std::make_unique<Pending>();
    request->receives = receives;
    return request;
  }
  void wait(std::unique_ptr<comm::Request> request, kernels::Stream) override {
    auto* pending = static_cast<Pending*>(request.get());
    std::unique_lock<std::mutex> lock(mailbox_.mutex);
    for (const comm::Message& m : pending->receives) {
      std::deque<std::vector<float>>& queue = mailbox_.queues[{m.peer, rank_}];
      mailbox_.arrived.wait(lock, [&] { return !queue.empty(); });
      HALOGEN_ASSERT(static_cast<int64_t>(queue.front().size()) == m.count, "message of %zu floats, %lld expected",
                     queue.front().size(), (long long)m.count);
      std::memcpy(m.data, queue.front().data(), m.count * sizeof(float));
      queue.pop_front();
    }
  }
  void allreduce_sum(float*, int64_t, kernels::Stream) override { HALOGEN_ASSERT(false, "not used"); }
  std::unique_ptr<comm::Request> start_allreduce_sum(float*, int64_t, kernels::Stream) override {
    HALOGEN_ASSERT(false, "not used");
    return nullptr;
  }
  void allreduce_sum(double*, int64_t) override { HALOGEN_ASSERT(false, "not used"); }
  void allreduce_sum(int64_t*, int64_t) override { HALOGEN_ASSERT(false, "not used"); }
  void allreduce_max(double*, int64_t) override { HALOGEN_ASSERT(false, "not used"); }
  void barrier() override { HALOGEN_ASSERT(false, "not used"); }
  [[noreturn]] void abort(int) override { std::abort(); }

 private:
  struct Pending : comm::Request {
    std::vector<comm::Message> receives;
  };
  Mailbox& mailbox_;
  int rank_, size_;
};

constexpr int64_t kNodes = 40, kIsolated = 7, kWidth = 3;

// The operator of the whole graph, dense, in double: gcn D^-1/2 (A + I) D^-1/2, or mean (1/deg over neighbours).
std::vector<double> dense_operator(const graph::Graph& g, graph::Normalization normalization) {
  const int64_t n = g.num_nodes;
  std::vector<double> s(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double di = static_cast<double>(g.adjacency.degree(i));
    if (normalization == graph::Normalization::gcn) s[i * n + i] = 1.0 / (di + 1.0);
    for (int64_t k = g.adjacency.indptr[i]; k < g.adjacency.indptr[i + 1]; ++k) {
      const int64_t j = g.adjacency.indices[k];
      const double dj = static_cast<double>(g.adjacency.degree(j));
      s[i * n + j] = normalization == graph::Normalization::gcn ? 1.0 / std::sqrt((di + 1.0) * (dj + 1.0)) : 1.0 / di;
    }
  }
  return s;
}

// Inputs keyed by global vertex id, so every rank fills its rows alike.
float input_value(int64_t gid, int64_t c, int salt) {
  return 0.1f * static_cast<float>((gid * 7 + c * 3 + salt * 5) % 11) - 0.5f;
}

// Vertex 7 (isolated) alone on part P-2, nothing on part P-1 (P >= 3); the rest spread over the other parts.
std::vector<int32_t> assignment(int32_t parts) {
  std::vector<int32_t> part_of(kNodes);
  const int32_t regular = parts >= 3 ? parts - 2 : parts;
  for (int64_t v = 0; v < kNodes; ++v)
    part_of[v] = static_cast<int32_t>((static_cast<uint64_t>(v) * 2654435761u >> 7) % regular);
  if (parts >= 3) part_of[kIsolated] = parts - 2;
  return part_of;
}

// One rank's results, row r for owned vertex gid[r]: (n, kWidth) each.
struct RankResult {
  std::vector<int64_t> gid;
  int64_t num_halo = 0;
  std::vector<float> forward, transpose, forward_extra, transpose_extra;
  int extra_calls = 0;
  std::vector<std::vector<float>> pipelined, single;  // 3 steps: gcn, mean, gcn
};

void fill_owned(Matrix<float> x, const std::vector<int64_t>& gid, int salt) {
  for (int64_t r = 0; r < static_cast<int64_t>(gid.size()); ++r)
    for (int64_t c = 0; c < x.cols; ++c) x(r, c) = input_value(gid[r], c, salt);
}

RankResult run_rank(comm::Communicator& comm, const graph::Graph& g, const std::vector<int32_t>& part_of,
                    graph::Normalization normalization, bool overlap) {
  const graph::Shard s = testing::make_shard(g, part_of, comm.size(), comm.rank());
  const int64_t n = s.num_owned(), h = s.num_halo(), f = kWidth;
  DistributedAdjacency a(comm, graph::build_local_graph(s, normalization), s.plan, f, Device::cpu);
  a.set_overlap(overlap);
  RankResult result;
  result.gid = s.owned_gid;
  result.num_halo = h;
  const float garbage = std::numeric_limits<float>::quiet_NaN();  // must be overwritten ("=")
  Tensor x(n + h, f, Device::cpu), out(n, f, Device::cpu), grad(n, f, Device::cpu);
  auto forward = [&](OverlapWork extra) {
    for (int64_t i = 0; i < x.size(); ++i) x[i] = garbage;  // halo rows too: the exchange must fill them
    for (int64_t i = 0; i < out.size(); ++i) out[i] = garbage;
    fill_owned(x.matrix(), s.owned_gid, 0);
    a.forward(x.matrix(), out.matrix(), extra);
    return std::vector<float>(out.data(), out.data() + out.size());
  };
  auto transpose = [&](OverlapWork extra) {
    fill_owned(grad.matrix(), s.owned_gid, 1);
    for (int64_t i = 0; i < out.size(); ++i) out[i] = garbage;
    a.transpose(grad.matrix(), out.matrix(), extra);
    return std::vector<float>(out.data(), out.data() + out.size());
  };
  // Extra work adds 1 to every output (it runs after the owned product, before the halo part).
  auto add_one = [&] {
    ++result.extra_calls;
    for (int64_t i = 0; i < out.size(); ++i) out[i] += 1.0f;
  };
  result.forward = forward({});
  result.transpose = transpose({});
  result.forward_extra = forward(add_one);
  result.transpose_extra = transpose(add_one);

  // Pipelined: steps gcn, mean, gcn (two objects used in turn), inputs with salts 0, 1, 2; two input buffers.
  DistributedAdjacency gcn(comm, graph::build_local_graph(s, graph::Normalization::gcn), s.plan, f, Device::cpu);
  DistributedAdjacency mean(comm, graph::build_local_graph(s, graph::Normalization::mean), s.plan, f, Device::cpu);
  gcn.set_overlap(overlap);
  mean.set_overlap(overlap);
  const std::vector<DistributedAdjacency*> steps{&gcn, &mean, &gcn};
  std::vector<Tensor> buffers;
  std::vector<Tensor> outputs;
  for (int i = 0; i < 2; ++i) buffers.emplace_back(n + h, f, Device::cpu);
  for (int i = 0; i < 3; ++i) outputs.emplace_back(n, f, Device::cpu);
  std::vector<Matrix<float>> out_views;
  for (Tensor& o : outputs) out_views.push_back(o.matrix());
  int64_t next_input = 0;
  forward_pipelined(steps, [&](int64_t i) {
    EXPECT_EQ(i, next_input++) << "inputs are asked for once each, in order";
    Matrix<float> xi = buffers[i % 2].matrix();
    fill_owned(xi, s.owned_gid, static_cast<int>(i));
    return xi;
  }, out_views);
  for (int i = 0; i < 3; ++i) {
    result.pipelined.emplace_back(outputs[i].data(), outputs[i].data() + outputs[i].size());
    fill_owned(x.matrix(), s.owned_gid, i);
    steps[i]->forward(x.matrix(), out.matrix());
    result.single.emplace_back(out.data(), out.data() + out.size());
  }
  return result;
}

std::vector<RankResult> run_ranks(int parts, const graph::Graph& g, graph::Normalization normalization, bool overlap) {
  ThreadComm::Mailbox mailbox;
  std::vector<RankResult> results(parts);
  const std::vector<int32_t> part_of = assignment(parts);
  std::vector<std::thread> threads;
  for (int r = 0; r < parts; ++r)
    threads.emplace_back([&, r] {
      ThreadComm comm(mailbox, r, parts);
      results[r] = run_rank(comm, g, part_of, normalization, overlap);
    });
  for (std::thread& t : threads) t.join();
  return results;
}

// Float products of rows with at most a few dozen terms of size <= 1 against double sums: 1e-5 is ~100 ulps.
constexpr double kTolerance = 1e-5;

TEST(DistributedAdjacency, MatchesDenseOperatorOnAnyRankCount) {
  const graph::Graph g = testing::synthetic_graph(kNodes, 3, 2, 3, 5, kIsolated);
  for (auto normalization : {graph::Normalization::gcn, graph::Normalization::mean}) {
    const std::vector<double> s = dense_operator(g, normalization);
    for (int parts : {1, 5}) {
      for (bool overlap : {true, false}) {
        const std::vector<RankResult> results = run_ranks(parts, g, normalization, overlap);
        const std::string where = "parts " + std::to_string(parts) + " overlap " + std::to_string(overlap) +
                                  " mean " + std::to_string(normalization == graph::Normalization::mean);
        int64_t rows = 0;
        for (int r = 0; r < parts; ++r) {
          const RankResult& result = results[r];
          EXPECT_EQ(result.extra_calls, 2) << where;
          for (size_t i = 0; i < result.gid.size(); ++i) {
            const int64_t v = result.gid[i];
            ++rows;
            for (int64_t c = 0; c < kWidth; ++c) {
              double forward = 0, transpose = 0;
              for (int64_t j = 0; j < kNodes; ++j) {
                forward += s[v * kNodes + j] * input_value(j, c, 0);
                transpose += s[j * kNodes + v] * input_value(j, c, 1);
              }
              const size_t k = i * kWidth + c;
              EXPECT_NEAR(result.forward[k], forward, kTolerance) << where << " vertex " << v;
              EXPECT_NEAR(result.transpose[k], transpose, kTolerance) << where << " vertex " << v;
              EXPECT_NEAR(result.forward_extra[k], forward + 1.0, kTolerance) << where << " vertex " << v;
              EXPECT_NEAR(result.transpose_extra[k], transpose + 1.0, kTolerance) << where << " vertex " << v;
            }
          }
          // Same kernels on the same operands in the same order: the pipelined pass is bitwise the plain one.
          for (int i = 0; i < 3; ++i) EXPECT_EQ(result.pipelined[i], result.single[i]) << where << " step " << i;
        }
        EXPECT_EQ(rows, kNodes) << where;
        if (parts == 5) {
          EXPECT_EQ(results[3].gid, std::vector<int64_t>{kIsolated}) << "a rank with one isolated vertex";
          EXPECT_EQ(results[3].num_halo, 0) << "and no halo";
          EXPECT_TRUE(results[4].gid.empty()) << "a rank with no vertices";
          EXPECT_GT(results[0].num_halo, 0) << "the other ranks exchange rows";
        }
      }
    }
  }
}

// A rank's mean row of an isolated vertex is empty: S x and S^T g are zero there (and not left unwritten).
TEST(DistributedAdjacency, EmptyRowGivesZero) {
  const graph::Graph g = testing::synthetic_graph(kNodes, 3, 2, 3, 5, kIsolated);
  const std::vector<RankResult> results = run_ranks(5, g, graph::Normalization::mean, true);
  for (int64_t c = 0; c < kWidth; ++c) {
    EXPECT_EQ(results[3].forward[c], 0.0f);
    EXPECT_EQ(results[3].transpose[c], 0.0f);
  }
}

}  // namespace
}  // namespace halogen::nn
