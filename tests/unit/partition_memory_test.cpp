// METIS within a memory budget (partition/metis_memory.h, assign_metis_within) and the streaming command
// path (partition_graph_file: features validated in blocks and read per shard): sparsification is symmetric,
// deterministic and keeps low-degree rows whole; the greedy refinement removes exactly the cut it reports and
// respects the load bounds; an unlimited budget reproduces assign_metis; a tight one still gives a balanced
// partition with METIS-class halo on a community graph; the directories pass every invariant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/generate.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "partition/assign.h"
#include "partition/check.h"
#include "partition/halo_plan.h"
#include "partition/metis_memory.h"
#include "partition/partition_dir.h"
#include "partition/phase_log.h"
#include "partition/statistics.h"
#include "partition/test_graphs.h"

using namespace halogen;
using namespace halogen::partition;
using namespace halogen::partition_test;

namespace {

// The symmetric adjacency without self-loops of an undirected graph.
SymmetricGraph symmetric_of(const graph::Csr& adj) {
  SymmetricGraph g;
  g.xadj.assign(adj.num_rows + 1, 0);
  for (int64_t u = 0; u < adj.num_rows; ++u) {
    for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
      if (adj.indices[e] != u) g.adjncy.push_back(static_cast<int32_t>(adj.indices[e]));
    g.xadj[u + 1] = static_cast<int32_t>(g.adjncy.size());
  }
  return g;
}

// SBM with clear communities (8 blocks, 95% of edges inside), power-law degrees when degree_exponent > 2.
graph::Graph sbm(int64_t nodes, double degree_exponent = 0) {
  io::SbmParams params;
  params.nodes = nodes;
  params.classes = 8;
  params.homophily = 0.95;
  params.features = 0;
  params.degree_exponent = degree_exponent;
  return io::generate_sbm(params);
}

AssignOptions metis_options(int32_t parts, uint64_t seed = 1) {
  AssignOptions o;
  o.method = Method::metis;
  o.num_parts = parts;
  o.seed = seed;
  return o;
}

int64_t halo_total(const graph::Graph& g, const std::vector<int32_t>& part_of, int32_t parts) {
  return compute_statistics(g, build_halo_plan(g.adjacency, part_of, parts)).total_halo;
}

}  // namespace

TEST(MetisMemory, SparsifyIsSymmetricDeterministicAndKeepsLowDegreeRows) {
  const graph::Graph source = sbm(3000, 2.5);
  const SymmetricGraph full = symmetric_of(source.adjacency);
  const int64_t target = full.num_entries() / 3;
  double k = 0;
  const SymmetricGraph sparse = sparsify(full, target, 7, &k);
  ASSERT_EQ(sparse.num_nodes(), full.num_nodes());
  EXPECT_NEAR(static_cast<double>(sparse.num_entries()), static_cast<double>(target), 0.1 * target);
  EXPECT_GT(k, 1.0);

  std::map<std::pair<int32_t, int32_t>, int32_t> weight;
  int64_t weight_sum = 0;
  for (int64_t u = 0; u < sparse.num_nodes(); ++u) {
    for (int64_t e = sparse.xadj[u]; e < sparse.xadj[u + 1]; ++e) {
      weight[{static_cast<int32_t>(u), sparse.adjncy[e]}] = sparse.adjwgt[e];
      weight_sum += sparse.adjwgt[e];
      EXPECT_GE(sparse.adjwgt[e], 1);
      const auto row = full.adjncy.begin();
      EXPECT_TRUE(std::binary_search(row + full.xadj[u], row + full.xadj[u + 1], sparse.adjncy[e]))
          << "kept entry (" << u << ", " << sparse.adjncy[e] << ") is not an edge";
    }
  }
  for (const auto& [edge, w] : weight) {
    const auto reverse = weight.find({edge.second, edge.first});
    ASSERT_NE(reverse, weight.end()) << "edge (" << edge.first << ", " << edge.second << ") kept one way";
    EXPECT_EQ(reverse->second, w);
  }
  // Kept edges weigh 1 / probability: the total weight estimates the full entry count.
  EXPECT_NEAR(static_cast<double>(weight_sum), static_cast<double>(full.num_entries()),
              0.1 * full.num_entries());
  // A vertex of degree <= k keeps all its edges (its neighbours' edges to it are kept as well).
  int64_t whole_rows = 0;
  for (int64_t u = 0; u < full.num_nodes(); ++u) {
    if (full.xadj[u + 1] - full.xadj[u] > k) continue;
    ++whole_rows;
    EXPECT_EQ(sparse.xadj[u + 1] - sparse.xadj[u], full.xadj[u + 1] - full.xadj[u]) << "vertex " << u;
  }
  EXPECT_GT(whole_rows, 0);

  const SymmetricGraph again = sparsify(full, target, 7);
  EXPECT_EQ(again.xadj, sparse.xadj);
  EXPECT_EQ(again.adjncy, sparse.adjncy);
  EXPECT_EQ(again.adjwgt, sparse.adjwgt);
  EXPECT_NE(sparsify(full, target, 8).adjncy, sparse.adjncy);
  const SymmetricGraph copy = sparsify(full, full.num_entries(), 7);  // already within the target
  EXPECT_EQ(copy.adjncy, full.adjncy);
  EXPECT_TRUE(copy.adjwgt.empty());
}

// Two 5-cliques {0..4} and {5..9} joined by the edge 4-5; vertex 0 starts in the second clique's part.
TEST(MetisMemory, RefineGreedyRemovesTheCutItReportsWithinLoads) {
  std::vector<std::pair<int64_t, int64_t>> edges{{4, 5}};
  for (int64_t c : {0, 5})
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = i + 1; j < 5; ++j) edges.emplace_back(c + i, c + j);
  const SymmetricGraph g = symmetric_of(csr_from_edges(10, edges, true));
  const std::vector<int32_t> start{1, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  EXPECT_EQ(cut_weight(g, start), 5);

  std::vector<int32_t> part_of = start;
  EXPECT_EQ(refine_greedy(g, {}, 1, {6, 6}, 2, part_of, 4), 4);
  EXPECT_EQ(part_of, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(cut_weight(g, part_of), 1);

  part_of = start;  // part 0 may not grow past 4: nothing moves
  EXPECT_EQ(refine_greedy(g, {}, 1, {4, 6}, 2, part_of, 4), 0);
  EXPECT_EQ(part_of, start);

  part_of = start;  // vertex weights count: vertex 0 weighs 3, part 0 would reach 7 > 6
  std::vector<int32_t> vwgt(10, 1);
  vwgt[0] = 3;
  EXPECT_EQ(refine_greedy(g, vwgt, 1, {6, 8}, 2, part_of, 4), 0);
  EXPECT_EQ(refine_greedy(g, vwgt, 1, {7, 8}, 2, part_of, 4), 4);
}

// The estimate stays above the peaks measured on the development machine (docs/partition.md), within 25%.
TEST(MetisMemory, EstimateCoversMeasuredPeaks) {
  const double mib = 1 << 20;
  const double rmat = static_cast<double>(estimate_metis_bytes(1048576, 31403536, 8)) / mib;  // measured 1982
  EXPECT_GE(rmat, 1982.5);
  EXPECT_LE(rmat, 1.25 * 1982.5);
  const double sbm = static_cast<double>(estimate_metis_bytes(1000000, 15999250, 8)) / mib;  // measured 1063
  EXPECT_GE(sbm, 1062.8);
  EXPECT_LE(sbm, 1.25 * 1062.8);
}

TEST(MetisMemory, UnlimitedBudgetReproducesAssignMetisAndRestoresTheAdjacency) {
  const graph::Graph g = community_graph(200, 4, 5, 3);
  for (int32_t parts : {1, 4}) {
    graph::Graph held = g;
    int rereads = 0;
    MetisMemoryReport report;
    const std::vector<int32_t> part_of = assign_metis_within(
        held, metis_options(parts), 0,
        [&] {
          ++rereads;
          return g.adjacency;
        },
        &report);
    EXPECT_EQ(part_of, assign_metis(g, metis_options(parts)));
    EXPECT_FALSE(report.sparsified);
    EXPECT_EQ(held.adjacency.indices, g.adjacency.indices);
    EXPECT_EQ(rereads, parts == 1 ? 0 : 1);
  }
}

TEST(MetisMemory, TightBudgetSparsifiesDeterministicallyAndKeepsQuality) {
  const graph::Graph g = sbm(8000);
  const int32_t parts = 8;
  const int64_t entries = g.adjacency.nnz();
  // The modelled rest of the process (48 MiB + the graph's arrays less its released adjacency, about 1 MiB
  // here) plus METIS's estimate for half the entries: METIS gets about half the graph.
  const int64_t budget = (int64_t{49} << 20) + estimate_metis_bytes(g.num_nodes, entries / 2, parts);
  auto run = [&](MetisMemoryReport* report) {
    graph::Graph held = g;
    return assign_metis_within(
        held, metis_options(parts), budget, [&] { return g.adjacency; }, report);
  };
  MetisMemoryReport report;
  const std::vector<int32_t> part_of = run(&report);
  ASSERT_TRUE(report.sparsified);
  EXPECT_LT(report.metis_entries, 0.7 * entries);
  EXPECT_GT(report.metis_entries, 0.2 * entries);
  EXPECT_LE(report.cut_after_refinement, report.cut_before_refinement);
  EXPECT_EQ(run(nullptr), part_of);

  const PartitionStats stats = compute_statistics(g, build_halo_plan(g.adjacency, part_of, parts));
  EXPECT_EQ(stats.empty_parts, 0);
  EXPECT_LE(stats.vertex_balance, 1.035);
  AssignOptions random = metis_options(parts);
  random.method = Method::random;
  const int64_t random_halo = halo_total(g, assign_parts(g, random), parts);
  EXPECT_LE(5 * stats.total_halo, random_halo) << "sparsified METIS halo " << stats.total_halo;
  // Within 25% of METIS on the whole graph.
  EXPECT_LE(stats.total_halo, 1.25 * halo_total(g, assign_metis(g, metis_options(parts)), parts));
}

// The command's path: features are not held whole but every shard's features equal the graph's.
TEST(PartitionGraphFile, StreamedFeaturesPassEveryInvariantWithAndWithoutSparsifying) {
  TempDir dir("stream");
  const graph::Graph g = community_graph(150, 4, 7, 5);
  const std::string path = dir.sub("g.h5");
  io::write_graph(path, g);
  for (bool tight : {false, true}) {
    PartitionRequest request;
    request.graph_path = path;
    request.output_dir = dir.sub(tight ? "tight" : "default");
    request.options = metis_options(4);
    request.memory_limit_bytes = tight ? 1 : 0;
    request.feature_block_bytes = tight ? 40 : int64_t{16} << 20;  // 3 rows of 3 features per block
    request.command = "test";
    partition_graph_file(request);
    EXPECT_NO_THROW(check_partition_dir(request.output_dir, g));
    std::ifstream meta_file(request.output_dir + "/meta.json");
    const nlohmann::json meta = nlohmann::json::parse(meta_file);
    EXPECT_EQ(meta["memory"]["metis_sparsified"].get<bool>(), tight);
    if (!tight) {  // a small graph gets METIS on the whole graph: the same parts as in memory
      const std::vector<int32_t> expected = assign_metis(g, metis_options(4));
      PartitionStats stats = compute_statistics(g, build_halo_plan(g.adjacency, expected, 4));
      EXPECT_EQ(meta["statistics"]["cut_edges"].get<int64_t>(), stats.cut_edges);
      EXPECT_EQ(meta["statistics"]["halo_rows_total"].get<int64_t>(), stats.total_halo);
    }
  }
}

// Features are validated while streamed: a non-finite value is one clear error naming the row and column,
// before any output exists.
TEST(PartitionGraphFile, NonFiniteFeatureIsRejectedBeforeAnyOutput) {
  TempDir dir("nan");
  graph::Graph g = community_graph(50, 2, 0, 9);
  g.features[7 * g.num_features + 2] = std::numeric_limits<float>::quiet_NaN();
  const std::string path = dir.sub("nan.h5");
  {  // write_graph refuses such a graph, so the file is written dataset by dataset
    h5::File file(path, h5::Mode::create);
    file.set_attr("format", std::string("halogen.graph"));
    file.set_attr("version", io::kGraphFileVersion);
    file.set_attr("name", g.name);
    file.set_attr("num_nodes", g.num_nodes);
    file.set_attr("num_edges", g.num_edges());
    file.set_attr("directed", int64_t{0});
    file.set_attr("num_classes", static_cast<int64_t>(g.num_classes));
    file.set_attr("num_features", g.num_features);
    file.write("/csr/indptr", g.adjacency.indptr);
    file.write("/csr/indices", g.adjacency.indices);
    file.write("/node/feat", g.features.data(), {g.num_nodes, g.num_features});
    file.write("/node/label", g.labels);
    file.write("/split/train", g.train);
    file.write("/split/valid", g.valid);
    file.write("/split/test", g.test);
  }
  EXPECT_NO_THROW(io::read_graph_without_features(path));
  PartitionRequest request;
  request.graph_path = path;
  request.output_dir = dir.sub("out");
  request.options = metis_options(2);
  request.feature_block_bytes = 64;  // 5 rows per block: the NaN row is in the second
  try {
    partition_graph_file(request);
    FAIL() << "a NaN feature was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/node/feat: row 7, column 2: not finite"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(request.output_dir));
}
