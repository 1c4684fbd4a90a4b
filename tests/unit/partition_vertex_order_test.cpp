// partition --vertex-order (partition/vertex_order.h): reverse Cuthill-McKee is a deterministic permutation
// that brings the bandwidth of a shuffled path and grid down to what their natural order gives, and a shard
// renumbered by it is the gid shard with its owned vertices renamed (every partition invariant of check.h
// holds; every vertex keeps its row, features, label and split; the bytes of a gid partition are unchanged).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/error.h"
#include "io/part_file.h"
#include "partition/check.h"
#include "partition/halo_plan.h"
#include "partition/partition_dir.h"
#include "partition/test_graphs.h"
#include "partition/vertex_order.h"
#include "partition_dir_util.h"
#include "temp_dir_util.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

namespace {

// Edges of a path (n vertices) or a side x side grid with vertex v renamed name[v].
std::vector<std::pair<int64_t, int64_t>> renamed(const std::vector<std::pair<int64_t, int64_t>>& edges,
                                                 const std::vector<int64_t>& name) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (auto [u, v] : edges) out.push_back({name[u], name[v]});
  return out;
}
std::vector<std::pair<int64_t, int64_t>> path_edges(int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t v = 0; v + 1 < n; ++v) edges.push_back({v, v + 1});
  return edges;
}
std::vector<std::pair<int64_t, int64_t>> grid_edges(int64_t side) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t r = 0; r < side; ++r)
    for (int64_t c = 0; c < side; ++c) {
      if (c + 1 < side) edges.push_back({r * side + c, r * side + c + 1});
      if (r + 1 < side) edges.push_back({r * side + c, (r + 1) * side + c});
    }
  return edges;
}
std::vector<int64_t> shuffled_ids(int64_t n, uint64_t seed) {
  std::vector<int64_t> name(static_cast<size_t>(n));
  std::iota(name.begin(), name.end(), 0);
  std::shuffle(name.begin(), name.end(), std::mt19937_64(seed));
  return name;
}

// The one-part shard of a graph (gid order).
graph::Shard whole_shard(const graph::Graph& g) {
  return build_shard(g, build_halo_plan(g.adjacency, std::vector<int32_t>(g.num_nodes, 0), 1), 0);
}

graph::Graph graph_of(int64_t n, const std::vector<std::pair<int64_t, int64_t>>& edges) {
  graph::Graph g;
  g.num_nodes = n;
  g.adjacency = csr_from_edges(n, edges, true);
  decorate(g, 3, 4);
  return g;
}

bool is_permutation_of_n(const std::vector<int32_t>& order) {
  std::vector<int32_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int32_t>(i)) return false;
  return true;
}

}  // namespace

TEST(RcmOrder, ShuffledPathGetsBandwidthOne) {
  const int64_t n = 500;
  graph::Shard s = whole_shard(graph_of(n, renamed(path_edges(n), shuffled_ids(n, 7))));
  const int64_t before = owned_bandwidth(s);
  EXPECT_GT(before, n / 4);  // a shuffled path: neighbours are far apart in gid order
  apply_vertex_order(s, VertexOrder::rcm);
  EXPECT_EQ(owned_bandwidth(s), 1);  // BFS from an end of the path walks it in order
}

TEST(RcmOrder, ShuffledGridGetsNaturalBandwidth) {
  const int64_t side = 30, n = side * side;
  graph::Shard s = whole_shard(graph_of(n, renamed(grid_edges(side), shuffled_ids(n, 11))));
  const int64_t before = owned_bandwidth(s);
  apply_vertex_order(s, VertexOrder::rcm);
  const int64_t after = owned_bandwidth(s);
  // Row-major order has bandwidth `side`; RCM from a corner numbers anti-diagonals, bandwidth at most 2 side
  // - 1 (the longest anti-diagonal plus its neighbour's), against ~n for the shuffled ids.
  EXPECT_GT(before, n / 2);
  EXPECT_LE(after, 2 * side - 1);
}

TEST(RcmOrder, IsADeterministicPermutationWithComponentsAndIsolatedVertices) {
  // Dense blocks with a few edges between them and isolated vertices: every vertex placed once.
  const graph::Graph g = community_graph(40, 3, 7, /*seed=*/5);
  const graph::Shard s = whole_shard(g);
  const std::vector<int32_t> a = rcm_order(s.num_owned(), s.indptr, s.indices);
  const std::vector<int32_t> b = rcm_order(s.num_owned(), s.indptr, s.indices);
  ASSERT_EQ(static_cast<int64_t>(a.size()), s.num_owned());
  EXPECT_TRUE(is_permutation_of_n(a));
  EXPECT_EQ(a, b);
  EXPECT_TRUE(rcm_order(0, {0}, {}).empty());
  const std::vector<int32_t> lonely = rcm_order(3, {0, 0, 0, 0}, {});
  EXPECT_EQ(lonely, (std::vector<int32_t>{0, 1, 2}));  // no edges: components in id order
}

TEST(ReorderOwned, EveryVertexKeepsItsRowDataAndSplit) {
  const int64_t n = 200;
  const graph::Graph g = graph_of(n, [&] {  // a shuffled grid, a path and one edge between them
    auto edges = renamed(grid_edges(10), shuffled_ids(100, 3));
    for (auto [u, v] : path_edges(100)) edges.push_back({u + 100, v + 100});
    edges.push_back({5, 150});
    return edges;
  }());
  const HaloPlan plan = build_halo_plan(
      g.adjacency,
      [&] {
        std::vector<int32_t> part(n);
        for (int64_t v = 0; v < n; ++v) part[v] = static_cast<int32_t>(v % 2);
        return part;
      }(),
      2);
  for (int32_t p = 0; p < 2; ++p) {
    const graph::Shard gid = build_shard(g, plan, p);
    graph::Shard rcm = gid;
    apply_vertex_order(rcm, VertexOrder::rcm);
    ASSERT_EQ(rcm.num_owned(), gid.num_owned());
    EXPECT_NE(rcm.owned_gid, gid.owned_gid);
    EXPECT_EQ(rcm.halo_gid, gid.halo_gid);
    EXPECT_EQ(rcm.plan.recv_offsets, gid.plan.recv_offsets);
    EXPECT_EQ(rcm.plan.send_offsets, gid.plan.send_offsets);
    const int64_t n_own = gid.num_owned();
    auto gid_of = [&](const graph::Shard& s, int64_t local) {
      return local < n_own ? s.owned_gid[local] : s.halo_gid[local - n_own];
    };
    std::vector<int64_t> old_of_gid(n, -1);
    for (int64_t i = 0; i < n_own; ++i) old_of_gid[gid.owned_gid[i]] = i;
    for (int64_t k = 0; k < n_own; ++k) {
      const int64_t i = old_of_gid[rcm.owned_gid[k]];
      ASSERT_GE(i, 0);
      EXPECT_EQ(rcm.degree_owned[k], gid.degree_owned[i]);
      EXPECT_EQ(rcm.labels[k], gid.labels[i]);
      for (int64_t c = 0; c < g.num_features; ++c)
        EXPECT_EQ(rcm.features[k * g.num_features + c], gid.features[i * g.num_features + c]);
      std::vector<int64_t> a, b;
      for (int64_t e = rcm.indptr[k]; e < rcm.indptr[k + 1]; ++e) a.push_back(gid_of(rcm, rcm.indices[e]));
      for (int64_t e = gid.indptr[i]; e < gid.indptr[i + 1]; ++e) b.push_back(gid_of(gid, gid.indices[e]));
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << "row of vertex " << rcm.owned_gid[k];
      EXPECT_TRUE(
          std::is_sorted(rcm.indices.begin() + rcm.indptr[k], rcm.indices.begin() + rcm.indptr[k + 1]));
    }
    for (size_t j = 0; j < gid.plan.send_idx.size(); ++j)  // the same vertex sent in the same slot
      EXPECT_EQ(rcm.owned_gid[rcm.plan.send_idx[j]], gid.owned_gid[gid.plan.send_idx[j]]);
    auto global = [](const graph::Shard& s, const std::vector<int64_t>& split) {
      std::vector<int64_t> out;
      for (int64_t i : split) out.push_back(s.owned_gid[i]);
      std::sort(out.begin(), out.end());
      return out;
    };
    EXPECT_TRUE(std::is_sorted(rcm.train.begin(), rcm.train.end()));
    EXPECT_EQ(global(rcm, rcm.train), global(gid, gid.train));
    EXPECT_EQ(global(rcm, rcm.valid), global(gid, gid.valid));
    EXPECT_EQ(global(rcm, rcm.test), global(gid, gid.test));
  }
}

TEST(ReorderOwned, RcmPartitionPassesTheCheckAndGidPartitionIsUnchanged) {
  const std::string tmp = test::fresh_temp_subdir("vertex-order", "partitions");
  const graph::Graph g = community_graph(30, 4, 5, /*seed=*/9, /*directed=*/true, /*weighted=*/true);
  for (VertexOrder order : {VertexOrder::gid, VertexOrder::rcm}) {
    PartitionRequest request;
    request.output_dir = tmp + "/" + vertex_order_name(order);
    request.options.method = Method::metis;
    request.options.num_parts = 3;
    request.options.vertex_order = order;
    request.command = "test";
    PhaseLog phases;
    write_partition(g, test::fake_source(), request, phases);
    EXPECT_NO_THROW(check_partition_dir(request.output_dir, g));
    EXPECT_EQ(io::read_partition_meta(request.output_dir).vertex_order, vertex_order_name(order));
  }
  for (int32_t p = 0; p < 3; ++p) {
    const graph::Shard gid = io::read_shard(tmp + "/gid", p);
    const graph::Shard rcm = io::read_shard(tmp + "/rcm", p);
    EXPECT_TRUE(std::is_sorted(gid.owned_gid.begin(), gid.owned_gid.end()));  // gid: today's shards
    std::vector<int64_t> sorted = rcm.owned_gid;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, gid.owned_gid);
    EXPECT_LE(owned_bandwidth(rcm), owned_bandwidth(gid));
  }
}

TEST(VertexOrderOption, ParsesBothSpellingsAndRejectsOthers) {
  EXPECT_EQ(parse_vertex_order("rcm"), VertexOrder::rcm);
  EXPECT_EQ(parse_vertex_order("gid"), VertexOrder::gid);
  EXPECT_THROW(parse_vertex_order("bfs"), UserError);
}
