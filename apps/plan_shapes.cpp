#include "apps/plan_shapes.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/info_memory.h"
#include "apps/json_file.h"
#include "core/error.h"
#include "core/format.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "partition/assign.h"
#include "partition/halo_plan.h"

namespace halogen::app {
namespace {

using nlohmann::json;

int64_t positive_count(const json& doc, const char* key, const std::string& path) {
  HALOGEN_USER_CHECK(doc.contains(key) && doc.at(key).is_number_integer() && doc.at(key).get<int64_t>() > 0,
                     "%s: field \"%s\" must be a positive integer", path.c_str(), key);
  return doc.at(key).get<int64_t>();
}

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// The sparse-input decision of nn::Model for `rows` rows at `density`.
void set_feature_nonzeros(nn::RankShape& shape, double density) {
  const int64_t nonzeros = static_cast<int64_t>(
      std::llround(density * static_cast<double>(shape.num_owned) * static_cast<double>(shape.num_features)));
  shape.sparse_feature_nonzeros =
      nn::Model::uses_sparse_input(nonzeros, shape.num_owned, shape.num_features) ? nonzeros : 0;
}

// A partition directory: exact shapes for its own P.
class PartitionSource : public PlanSource {
 public:
  explicit PartitionSource(const std::string& dir) : dir_(dir), meta_(io::read_partition_meta(dir)) {}

  std::vector<PlannedRank> ranks(int num_ranks) override {
    HALOGEN_USER_CHECK(
        num_ranks == meta_.num_parts,
        "%s: this partition has %d parts, so it plans --ranks %d only (give the graph file to plan "
        "other rank counts)",
        dir_.c_str(), meta_.num_parts, meta_.num_parts);
    std::vector<PlannedRank> result;
    for (int part = 0; part < meta_.num_parts; ++part) {
      PlannedRank rank;
      // One pass over /csr/indices: entries in halo columns (local column >= n_own) and per column.
      std::vector<int64_t> column_counts;
      rank.shape = read_part_shape(dir_, meta_, part, &column_counts);
      rank.traffic.halo_entries = rank.shape.halo_nnz;
      rank.traffic.top_column_entries = train::top_column_curve(std::move(column_counts));
      const h5::File file(io::shard_path(dir_, part), h5::Mode::read);
      if (file.exists("/halo/recv_offsets")) {
        const std::vector<int64_t> offsets = file.read<int64_t>("/halo/recv_offsets");
        for (size_t q = 0; q + 1 < offsets.size(); ++q) rank.traffic.peers += offsets[q + 1] > offsets[q];
      }
      result.push_back(rank);
    }
    return result;
  }
  std::string describe(int) const override {
    return strformat("partition %s (%s, %d parts): exact shard shapes", dir_.c_str(), meta_.method.c_str(),
                     meta_.num_parts);
  }
  std::vector<int> default_ranks() const override { return {meta_.num_parts}; }

 private:
  std::string dir_;
  io::PartitionMeta meta_;
};

// A statistics file, or a graph file's counts with an assumed cut.
class CountsSource : public PlanSource {
 public:
  CountsSource(GraphCounts counts, std::string what) : counts_(std::move(counts)), what_(std::move(what)) {}
  std::vector<PlannedRank> ranks(int num_ranks) override {
    HALOGEN_USER_CHECK(num_ranks <= counts_.num_nodes, "plan: --ranks %d: more ranks than the %lld vertices of %s",
                       num_ranks, static_cast<long long>(counts_.num_nodes), what_.c_str());
    return {assumed_rank_shape(counts_, num_ranks)};
  }
  std::string describe(int num_ranks) const override {
    return num_ranks == 1 ? what_ + ": one part"
                          : strformat("%s: %d equal parts, assumed edge cut %.3g of stored entries",
                                      what_.c_str(), num_ranks, counts_.edge_cut);
  }

 private:
  GraphCounts counts_;
  std::string what_;
};

// A graph file partitioned here (METIS with `halogen partition`'s default options) for each P.
class GraphSource : public PlanSource {
 public:
  explicit GraphSource(const std::string& path) : path_(path), graph_(io::read_graph_without_features(path)) {
    density_ = feature_density(path, graph_.num_nodes, graph_.num_features);
  }

  std::vector<PlannedRank> ranks(int num_ranks) override {
    HALOGEN_USER_CHECK(num_ranks <= graph_.num_nodes, "plan: --ranks %d: more ranks than the %lld vertices of %s",
                       num_ranks, static_cast<long long>(graph_.num_nodes), path_.c_str());
    partition::AssignOptions options;
    options.num_parts = num_ranks;
    std::vector<int32_t> part_of(static_cast<size_t>(graph_.num_nodes), 0);
    if (num_ranks > 1) {
      try {
        part_of = partition::assign_parts(graph_, options);
      } catch (const UserError& e) {  // e.g. a graph beyond METIS's 32-bit idx_t: plan from counts instead
        throw UserError(std::string(e.what()) + " (plan: --edge-cut F plans " + path_ +
                        " from its counts without partitioning)");
      }
    }
    const partition::HaloPlan plan = partition::build_halo_plan(graph_.adjacency, part_of, num_ranks);
    std::vector<PlannedRank> result(num_ranks);
    for (int p = 0; p < num_ranks; ++p) {
      nn::RankShape& shape = result[p].shape;
      shape.num_owned = plan.num_owned(p);
      shape.num_halo = plan.num_halo(p);
      shape.num_features = graph_.num_features;
      shape.num_classes = graph_.num_classes;
      for (int q = 0; q < num_ranks; ++q) {
        shape.num_send += plan.rows_sent(p, q);
        result[p].traffic.peers += q != p && plan.rows_sent(q, p) > 0;
      }
      set_feature_nonzeros(shape, density_);
      shape.own_symmetric = !graph_.directed;
    }
    // Per part: stored entries, those in halo columns, and how often each column is used (a count per
    // vertex, reused by every part: only the touched columns are collected and reset).
    const graph::Csr& a = graph_.adjacency;
    std::vector<int64_t> count(static_cast<size_t>(graph_.num_nodes), 0);
    std::vector<int64_t> touched;
    for (int p = 0; p < num_ranks; ++p) {
      touched.clear();
      for (int64_t i = plan.owned_offsets[p]; i < plan.owned_offsets[p + 1]; ++i) {
        const int64_t v = plan.owned_gid[i];
        result[p].shape.nnz += a.indptr[v + 1] - a.indptr[v];
        for (int64_t k = a.indptr[v]; k < a.indptr[v + 1]; ++k) {
          const int64_t c = a.indices[k];
          result[p].traffic.halo_entries += plan.part_of[c] != p;
          if (count[c]++ == 0) touched.push_back(c);
        }
      }
      std::vector<int64_t> column_counts;
      column_counts.reserve(touched.size());
      for (int64_t c : touched) {
        column_counts.push_back(count[c]);
        count[c] = 0;
      }
      result[p].traffic.top_column_entries = train::top_column_curve(std::move(column_counts));
      result[p].shape.halo_nnz = result[p].traffic.halo_entries;
    }
    for (const std::vector<int64_t>* split : {&graph_.train, &graph_.valid, &graph_.test})
      for (int64_t v : *split) ++result[plan.part_of[v]].shape.num_split_rows;
    return result;
  }
  std::string describe(int num_ranks) const override {
    return num_ranks == 1 ? strformat("graph %s: one part", path_.c_str())
                          : strformat("graph %s: partitioned here (METIS, default options) into %d parts",
                                      path_.c_str(), num_ranks);
  }

  // The nonzero fraction of /node/feat, read in blocks of rows.
  static double feature_density(const std::string& path, int64_t rows, int64_t cols) {
    if (rows == 0 || cols == 0) return 1.0;
    const h5::File file(path, h5::Mode::read);
    const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / (cols * 4));
    int64_t nonzeros = 0;
    for (int64_t begin = 0; begin < rows; begin += block) {
      const std::vector<float> values =
          file.read_rows<float>("/node/feat", begin, std::min(rows, begin + block));
      nonzeros += std::count_if(values.begin(), values.end(), [](float v) { return v != 0.0f; });
    }
    return static_cast<double>(nonzeros) / (static_cast<double>(rows) * static_cast<double>(cols));
  }

 private:
  std::string path_;
  graph::Graph graph_;
  double density_ = 1.0;
};

}  // namespace

GraphCounts read_graph_stats(const std::string& path) {
  const json doc = read_json_document(path, "graph statistics file", "halogen.graph_stats");
  GraphCounts counts;
  counts.name = doc.value("name", path);
  counts.num_nodes = positive_count(doc, "num_nodes", path);
  counts.num_edges = positive_count(doc, "num_edges", path);
  counts.num_features = positive_count(doc, "num_features", path);
  counts.num_classes = positive_count(doc, "num_classes", path);
  if (doc.contains("split")) {
    const json& split = doc.at("split");
    for (const char* name : {"train", "valid", "test"})
      if (split.contains(name)) counts.split_rows += split.at(name).get<int64_t>();
  }
  counts.feature_density = doc.value("feature_density", 1.0);
  counts.directed = doc.value("directed", false);
  HALOGEN_USER_CHECK(counts.feature_density > 0 && counts.feature_density <= 1,
                     "%s: field \"feature_density\" must be in (0, 1]", path.c_str());
  if (doc.contains("edge_cut")) {
    counts.edge_cut = doc.at("edge_cut").get<double>();
    HALOGEN_USER_CHECK(counts.edge_cut >= 0 && counts.edge_cut <= 1,
                       "%s: field \"edge_cut\" must be in [0, 1]", path.c_str());
  }
  return counts;
}

PlannedRank assumed_rank_shape(const GraphCounts& counts, int num_ranks) {
  PlannedRank rank;
  nn::RankShape& shape = rank.shape;
  shape.num_owned = ceil_div(counts.num_nodes, num_ranks);
  shape.nnz = ceil_div(counts.num_edges, num_ranks);
  shape.num_features = counts.num_features;
  shape.num_classes = counts.num_classes;
  shape.num_split_rows = ceil_div(counts.split_rows, num_ranks);
  set_feature_nonzeros(shape, counts.feature_density);
  shape.own_symmetric = !counts.directed;
  if (num_ranks > 1) {
    const double cut = std::max(0.0, counts.edge_cut);
    rank.traffic.halo_entries = static_cast<int64_t>(std::llround(cut * static_cast<double>(shape.nnz)));
    shape.halo_nnz = rank.traffic.halo_entries;
    const double remote = static_cast<double>(counts.num_nodes - shape.num_owned);
    shape.num_halo =
        remote <= 0 ? 0
                    : static_cast<int64_t>(std::llround(
                          remote * -std::expm1(-static_cast<double>(rank.traffic.halo_entries) / remote)));
    shape.num_send = shape.num_halo;
    rank.traffic.peers = shape.num_halo > 0 ? num_ranks - 1 : 0;
  }
  return rank;
}

std::unique_ptr<PlanSource> open_plan_source(const std::string& path, double edge_cut) {
  std::error_code ec;
  HALOGEN_USER_CHECK(std::filesystem::exists(path, ec), "%s: no such file or directory", path.c_str());
  if (std::filesystem::is_directory(path, ec)) {
    HALOGEN_USER_CHECK(edge_cut < 0, "%s: --edge-cut applies to a graph or statistics file, not a partition",
                       path.c_str());
    return std::make_unique<PartitionSource>(path);
  }
  if (std::filesystem::path(path).extension() == ".json") {
    GraphCounts counts = read_graph_stats(path);
    if (edge_cut >= 0) counts.edge_cut = edge_cut;
    HALOGEN_USER_CHECK(counts.edge_cut >= 0, "%s: no \"edge_cut\" field: give --edge-cut F", path.c_str());
    return std::make_unique<CountsSource>(counts, "statistics " + path);
  }
  if (edge_cut < 0) return std::make_unique<GraphSource>(path);
  // A graph file with an assumed cut: its counts only.
  const h5::File file(path, h5::Mode::read);
  io::check_graph_format(file);
  GraphCounts counts;
  counts.name = path;
  counts.num_nodes = file.attr_int("num_nodes");
  counts.num_edges = file.attr_int("num_edges");
  counts.num_classes = file.attr_int("num_classes");
  counts.num_features = file.exists("/node/feat") ? file.shape("/node/feat").back() : 0;
  for (const char* split : {"/split/train", "/split/valid", "/split/test"})
    if (file.exists(split)) counts.split_rows += file.shape(split).at(0);
  counts.feature_density = GraphSource::feature_density(path, counts.num_nodes, counts.num_features);
  counts.edge_cut = edge_cut;
  counts.directed = file.has_attr("directed") && file.attr_int("directed") != 0;
  return std::make_unique<CountsSource>(counts, "graph " + path + " (counts)");
}

}  // namespace halogen::app
