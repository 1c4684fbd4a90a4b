// Link-prediction steps built at partition time (partition/link_steps.h): every part's pairs and fetch plan
// against a naive construction (sets of neighbours, Philox draws written out again, fetched rows as the set
// of remote endpoints, sends as the receivers' fetched groups) for P = 1, 2, 3 and K = 1, 3; the edge cases
// of a part with no remote endpoint, vertices with no neighbour in G_{s+1} and P = 1; the directory round
// trip (write, read, `info --check`); corrupted link data rejected by the reader and by the checker, naming
// the file and the dataset or step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "dynamic/temporal_shards.h"
#include "graph/build.h"
#include "io/part_file.h"
#include "io/temporal.h"
#include "partition/check.h"
#include "partition/link_steps.h"
#include "partition/partition_dir.h"
#include "partition_dir_util.h"

namespace fs = std::filesystem;
using namespace halogen;
using namespace halogen::partition;

using halogen::test::undirected;

namespace {

std::string temp_dir(const std::string& name) { return halogen::test::fresh_dir("link_steps", name); }


std::vector<int32_t> scattered(int64_t n, int32_t parts) {
  std::vector<int32_t> part_of(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>((v * 7 + v / 5) % parts);
  return part_of;
}

// (endpoint gid, label) of every pair of source u at a step, as the definition says, written naively.
std::vector<std::pair<int64_t, int>> naive_pairs(const graph::Csr& next, int64_t u, int64_t step, int64_t negatives,
                                                 uint64_t seed) {
  std::set<int64_t> neighbours;
  for (int64_t e = next.indptr[u]; e < next.indptr[u + 1]; ++e)
    if (next.indices[e] != u) neighbours.insert(next.indices[e]);
  std::vector<std::pair<int64_t, int>> pairs;
  for (int64_t v : neighbours) pairs.push_back({v, 1});
  const uint64_t stream = rng::stream_id(rng::kNegativeSampling, static_cast<uint32_t>(step),
                                         static_cast<uint32_t>(u), static_cast<uint32_t>(u >> 32));
  uint64_t draw = 0;
  for (size_t j = 0; j < negatives * neighbours.size(); ++j) {
    for (int attempt = 0; attempt < 32; ++attempt) {
      const rng::Philox4 r = rng::bits(seed, stream, draw++);
      const int64_t w = static_cast<int64_t>(((static_cast<uint64_t>(r.v[0]) << 32) | r.v[1]) %
                                             static_cast<uint64_t>(next.num_rows));
      if (w == u || neighbours.count(w)) continue;
      pairs.push_back({w, 0});
      break;
    }
  }
  return pairs;
}

// Every part's link steps against the naive construction.
void expect_matches_naive(const graph::Graph& g, const std::vector<int32_t>& part_of,
                          const std::vector<graph::Shard>& shards, int64_t negatives, uint64_t seed) {
  const int32_t parts = static_cast<int32_t>(shards.size());
  for (size_t t = 0; t + 1 < g.snapshots.size(); ++t) {
    const graph::Csr& next = g.snapshots[t + 1];
    for (const graph::Shard& shard : shards) {
      ASSERT_EQ(shard.link_negatives, negatives);
      ASSERT_EQ(shard.link_steps.size(), g.snapshots.size() - 1);
      const graph::ShardLinkStep& s = shard.link_steps[t];
      const int64_t n_own = shard.num_owned();
      const std::string where = "part " + std::to_string(shard.part) + " step " + std::to_string(t);
      // Pairs of every owned vertex with a neighbour, in order; remote endpoints collected by owner.
      std::set<std::pair<int32_t, int64_t>> remote;
      size_t i = 0;
      for (int64_t local = 0; local < n_own; ++local) {
        const int64_t u = shard.owned_gid[local];
        const auto expected = naive_pairs(next, u, static_cast<int64_t>(t), negatives, seed);
        if (expected.empty()) continue;
        ASSERT_LT(i, s.sources.size()) << where;
        ASSERT_EQ(s.sources[i], local) << where;
        std::vector<std::pair<int64_t, int>> got;
        for (int64_t k = s.source_offsets[i]; k < s.source_offsets[i + 1]; ++k) {
          const int32_t row = s.target[k];
          ASSERT_GE(row, 0);
          ASSERT_LT(row, n_own + s.num_fetched());
          got.push_back({row < n_own ? shard.owned_gid[row] : s.fetched_gid[row - n_own], s.label[k]});
        }
        EXPECT_EQ(got, expected) << where << " source " << u;
        for (const auto& [v, label] : expected)
          if (part_of[v] != shard.part) remote.insert({part_of[v], v});
        ++i;
      }
      EXPECT_EQ(i, s.sources.size()) << where;
      // Fetched rows: the remote endpoints, grouped by owner, ascending within; recv_offsets count them.
      std::vector<std::pair<int32_t, int64_t>> fetched;
      for (int32_t q = 0; q < parts; ++q)
        for (int64_t f = s.plan.recv_offsets[q]; f < s.plan.recv_offsets[q + 1]; ++f)
          fetched.push_back({q, s.fetched_gid[f]});
      EXPECT_EQ(fetched, (std::vector<std::pair<int32_t, int64_t>>(remote.begin(), remote.end()))) << where;
      EXPECT_EQ(s.plan.num_halo(), s.num_fetched()) << where;
      // Sends: to part q, q's fetched group from here, in q's order.
      for (int32_t q = 0; q < parts; ++q) {
        const graph::ShardLinkStep& r = shards[q].link_steps[t];
        std::vector<int64_t> sent, wanted;
        for (int64_t k = s.plan.send_offsets[q]; k < s.plan.send_offsets[q + 1]; ++k)
          sent.push_back(shard.owned_gid[s.plan.send_idx[k]]);
        for (int64_t f = r.plan.recv_offsets[shard.part]; f < r.plan.recv_offsets[shard.part + 1]; ++f)
          wanted.push_back(r.fetched_gid[f]);
        EXPECT_EQ(sent, wanted) << where << " to part " << q;
      }
    }
  }
}

std::vector<graph::Shard> shards_of(const graph::Graph& g, const std::vector<int32_t>& part_of, int32_t parts,
                                    int64_t negatives, uint64_t seed) {
  std::vector<graph::Shard> shards;
  for (int32_t p = 0; p < parts; ++p)
    shards.push_back(halogen::testing::temporal_shard(g, part_of, parts, p, negatives, seed));
  return shards;
}

void expect_same_steps(const graph::Shard& a, const graph::Shard& b) {
  ASSERT_EQ(a.link_negatives, b.link_negatives);
  ASSERT_EQ(a.link_steps.size(), b.link_steps.size());
  for (size_t t = 0; t < a.link_steps.size(); ++t) {
    const graph::ShardLinkStep &x = a.link_steps[t], &y = b.link_steps[t];
    EXPECT_EQ(x.source_offsets, y.source_offsets);
    EXPECT_EQ(x.sources, y.sources);
    EXPECT_EQ(x.target, y.target);
    EXPECT_EQ(x.label, y.label);
    EXPECT_EQ(x.fetched_gid, y.fetched_gid);
    EXPECT_EQ(x.plan.recv_offsets, y.plan.recv_offsets);
    EXPECT_EQ(x.plan.send_idx, y.plan.send_idx);
    EXPECT_EQ(x.plan.send_offsets, y.plan.send_offsets);
  }
}

PartitionResult write_dir(const graph::Graph& g, const std::string& dir, int32_t parts, int64_t negatives,
                          uint64_t seed) {
  PartitionRequest request;
  request.output_dir = dir;
  request.options.method = Method::contiguous;
  request.options.num_parts = parts;
  request.options.seed = seed;
  request.link_negatives = negatives;
  request.command = "test";
  PhaseLog phases;
  return write_partition(g, SourceFile{"mem.h5", "/nonexistent/mem.h5", "fnv1a64:0", 0}, request, phases);
}

// `f` throws a UserError whose message contains `wanted`.
template <typename F>
void expect_user_error(F f, const std::string& wanted) {
  try {
    f();
    ADD_FAILURE() << "no error; expected '" << wanted << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(wanted), std::string::npos) << e.what();
  }
}

graph::Graph temporal_graph() {
  io::TemporalSbmParams p;
  p.sbm.nodes = 60;
  p.sbm.classes = 3;
  p.sbm.avg_degree = 4;
  p.sbm.seed = 5;
  p.steps = 5;
  p.churn = 0.4;
  return io::generate_temporal_sbm(p);
}

}  // namespace

TEST(LinkSteps, MatchNaiveConstructionForEveryPartCountAndNegatives) {
  const graph::Graph g = temporal_graph();
  for (int64_t negatives : {1, 3}) {
    for (int32_t parts : {1, 2, 3}) {
      SCOPED_TRACE("P " + std::to_string(parts) + " K " + std::to_string(negatives));
      const std::vector<int32_t> part_of = scattered(g.num_nodes, parts);
      expect_matches_naive(g, part_of, shards_of(g, part_of, parts, negatives, 11), negatives, 11);
    }
  }
}

TEST(LinkSteps, NegativesDependOnTheSeed) {
  const graph::Graph g = temporal_graph();
  const std::vector<int32_t> one(static_cast<size_t>(g.num_nodes), 0);
  const graph::Shard a = halogen::testing::temporal_shard(g, one, 1, 0, 1, 11);
  const graph::Shard b = halogen::testing::temporal_shard(g, one, 1, 0, 1, 12);
  EXPECT_NE(a.link_steps[0].target, b.link_steps[0].target);
  EXPECT_EQ(a.link_steps[0].sources, b.link_steps[0].sources);
}

// Vertices 0..5, parts {0,1,2} | {3,4,5}. G_0: the edge 0-1; G_1: the triangle 3-4-5. At step 0 (pairs of
// G_1) part 0's vertices have no neighbour, so part 0 has no sources and fetches nothing, yet sends: part 1's
// negatives can only be 0, 1 or 2 (3, 4, 5 are each other's neighbours).
TEST(LinkSteps, PartWithoutRemoteEndpointsAndVerticesWithoutNeighbours) {
  graph::Graph g;
  g.num_nodes = 6;
  g.snapshots = {undirected(6, {0}, {1}), undirected(6, {3, 4, 5}, {4, 5, 3})};
  g.adjacency = io::snapshot_union(6, g.snapshots);
  const std::vector<int32_t> part_of = {0, 0, 0, 1, 1, 1};
  const std::vector<graph::Shard> shards = shards_of(g, part_of, 2, 2, 7);
  expect_matches_naive(g, part_of, shards, 2, 7);
  const graph::ShardLinkStep &s0 = shards[0].link_steps[0], &s1 = shards[1].link_steps[0];
  EXPECT_TRUE(s0.sources.empty());
  EXPECT_EQ(s0.source_offsets, (std::vector<int64_t>{0}));
  EXPECT_EQ(s0.num_fetched(), 0);
  EXPECT_EQ(s0.plan.recv_offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(s1.sources, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(s1.num_pairs(), 3 * (2 + 2 * 2));  // 2 positives and 2 x 2 negatives each (32 tries never all fail here)
  EXPECT_GT(s0.plan.num_send(), 0);
  for (int64_t v : s1.fetched_gid) EXPECT_LT(v, 3);
  // Only snapshot pairs make steps: 2 snapshots, 1 step.
  EXPECT_EQ(shards[0].link_steps.size(), 1u);
}

TEST(LinkSteps, OneRankFetchesNothing) {
  const graph::Graph g = temporal_graph();
  const std::vector<int32_t> one(static_cast<size_t>(g.num_nodes), 0);
  const std::vector<graph::Shard> shards = shards_of(g, one, 1, 2, 3);
  expect_matches_naive(g, one, shards, 2, 3);
  for (const graph::ShardLinkStep& s : shards[0].link_steps) {
    EXPECT_EQ(s.num_fetched(), 0);
    EXPECT_EQ(s.plan.recv_offsets, (std::vector<int64_t>{0, 0}));
    EXPECT_EQ(s.plan.send_offsets, (std::vector<int64_t>{0, 0}));
    EXPECT_GT(s.num_pairs(), 0);
  }
}

TEST(LinkSteps, DirectoryRoundTripAndCheck) {
  const graph::Graph g = temporal_graph();
  const std::string dir = temp_dir("roundtrip");
  write_dir(g, dir, 3, 2, 9);
  const io::PartitionMeta meta = io::read_partition_meta(dir);
  EXPECT_EQ(meta.link_negatives, 2);
  const std::vector<int32_t> part_of = io::read_assignment(io::assignment_path(dir), 3, g.num_nodes);
  std::vector<graph::Shard> read;
  for (int32_t p = 0; p < 3; ++p) {
    read.push_back(io::read_shard(dir, p));
    expect_same_steps(read.back(), halogen::testing::temporal_shard(g, part_of, 3, p, 2, 9));
  }
  expect_matches_naive(g, part_of, read, 2, 9);
  EXPECT_NO_THROW(check_partition_dir(dir, g));
}

TEST(LinkSteps, CorruptLinkDataIsRejectedWithFileAndDataset) {
  const graph::Graph g = temporal_graph();
  const std::string dir = temp_dir("corrupt");
  write_dir(g, dir, 2, 1, 9);
  const std::string file = io::shard_path(dir, 1);
  const graph::Shard good = io::read_shard(dir, 1);
  auto rewrite = [&](auto change) {
    graph::Shard shard = good;
    change(shard);
    io::write_shard(file, shard);
  };
  // Reader: self-inconsistent datasets.
  rewrite([](graph::Shard& s) { s.link_steps[1].target[0] = 1 << 30; });
  expect_user_error([&] { io::read_shard(dir, 1); }, "part-00001.h5: /link/00001/target: row 1073741824 at index 0");
  rewrite([](graph::Shard& s) { s.link_steps[2].label[3] = 2; });
  expect_user_error([&] { io::read_shard(dir, 1); }, "part-00001.h5: /link/00002/label: value at index 3 not 0 or 1");
  rewrite([](graph::Shard& s) { s.link_steps[0].plan.recv_offsets = {0, 0, 0}; });
  expect_user_error([&] { io::read_shard(dir, 1); }, "part-00001.h5: /link/00000/fetch/recv_offsets: ends at 0");
  rewrite([](graph::Shard& s) { s.link_steps.pop_back(); });
  expect_user_error([&] { io::read_shard(dir, 1); }, "part-00001.h5: /: attribute num_link_steps is 3, expected 4");
  rewrite([](graph::Shard& s) { s.link_negatives = 4; });
  expect_user_error([&] { io::read_shard(dir, 1); },
                    "part-00001.h5: /: attribute link_negatives is 4, meta.json says 1");
  rewrite([](graph::Shard& s) {  // every fetched row said to come from this part
    graph::ShardLinkStep& step = s.link_steps[2];
    step.plan.recv_offsets = {0, 0, step.num_fetched()};
  });
  expect_user_error([&] { io::read_shard(dir, 1); },
                    "part-00001.h5: /link/00002/fetch/recv_offsets: rows fetched from self");
  // Checker: readable but wrong against the graph, the assignment or the other shard.
  rewrite([](graph::Shard& s) {  // a negative replaced by the source's first positive
    graph::ShardLinkStep& step = s.link_steps[1];
    step.target[step.source_offsets[1] - 1] = step.target[0];
  });
  expect_user_error([&] { check_partition_dir(dir, g); },
                    "part-00001.h5: invariant violated: /link/00001: negative pair");
  int64_t last = 0;
  rewrite([&](graph::Shard& s) {  // the last row fetched from part 0 (largest gid) replaced by a vertex of part 1
    graph::ShardLinkStep& step = s.link_steps[0];
    last = step.num_fetched() - 1;
    step.fetched_gid[last] = g.num_nodes - 1;
  });
  expect_user_error([&] { check_partition_dir(dir, g); },
                    "part-00001.h5: invariant violated: /link/00000: fetch/gid[" + std::to_string(last) +
                        "] = vertex " + std::to_string(g.num_nodes - 1) + " is owned by part 1");
  int64_t changed = -1;
  rewrite([&](graph::Shard& s) {  // a row part 1 sends part 0 moved to the next owned row, which it did not ask for
    graph::ShardLinkStep& step = s.link_steps[3];
    const int64_t end = step.plan.send_offsets[1];
    for (int64_t k = 0; k < end && changed < 0; ++k) {
      const int64_t next = k + 1 < end ? step.plan.send_idx[k + 1] : s.num_owned();
      if (step.plan.send_idx[k] + 1 < next) changed = k;
    }
    ASSERT_GE(changed, 0) << "part 1 sends every owned row to part 0";
    step.plan.send_idx[changed] += 1;
  });
  expect_user_error([&] { check_partition_dir(dir, g); },
                    "part-00001.h5: invariant violated: /link/00003: send row " + std::to_string(changed) +
                        " to part 0");
  rewrite([](graph::Shard&) {});
  EXPECT_NO_THROW(check_partition_dir(dir, g));
}
