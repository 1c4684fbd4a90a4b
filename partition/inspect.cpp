#include "partition/inspect.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"
#include "io/file_format.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "partition/check.h"

namespace halogen::partition {

namespace fs = std::filesystem;

namespace {

// The graph file a partition was made from: the absolute path recorded at creation, else the path as given.
std::string locate_graph_file(const io::PartitionMeta& meta, const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(meta.graph_file_absolute, ec)) return meta.graph_file_absolute;
  if (fs::is_regular_file(meta.graph_file, ec)) return meta.graph_file;
  throw UserError((fs::path(dir) / "meta.json").string() + ": graph file " + meta.graph_file_absolute +
                  " not found (moved?); --check needs the graph the partition was made from");
}

// One line on the per-step halo of a dynamic graph, from meta.json "statistics"/"snapshot_halo_rows"
// (written by `halogen partition`); nothing for a static graph or a directory made before it was recorded.
void print_snapshot_halo(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / "meta.json", ec)) return;  // a directory throws from the read
  std::ifstream in(fs::path(dir) / "meta.json");
  const nlohmann::json meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("statistics") || !meta["statistics"].is_object()) return;
  const nlohmann::json& stats = meta["statistics"];
  if (!stats.contains("snapshot_halo_rows")) return;
  const nlohmann::json& rows = stats["snapshot_halo_rows"];
  const bool well_formed = rows.is_object() && rows.value("mean", nlohmann::json()).is_number() &&
                           rows.value("max", nlohmann::json()).is_number_integer() &&
                           rows.value("per_step_total", nlohmann::json()).is_array();
  HALOGEN_USER_CHECK(well_formed,
                     "%s: \"statistics\"/\"snapshot_halo_rows\": expected {\"mean\", \"max\", "
                     "\"per_step_total\"}",
                     (fs::path(dir) / "meta.json").string().c_str());
  const int64_t union_halo = stats.value("halo_rows_total", int64_t{0});
  const double mean = rows["mean"].get<double>();
  std::printf(
      "snapshot halo rows (all parts, per step): mean %.1f, max %lld over %zu steps (%.0f%% of the union "
      "halo %lld on average)\n",
      mean, static_cast<long long>(rows["max"].get<int64_t>()), rows["per_step_total"].size(),
      union_halo > 0 ? 100.0 * mean / static_cast<double>(union_halo) : 0.0,
      static_cast<long long>(union_halo));
}

}  // namespace

void describe_partition_dir(const std::string& dir, bool check) {
  const io::PartitionMeta meta = io::read_partition_meta(dir);
  std::printf("partition directory %s: %s, %d parts of graph %s (%s)\n", dir.c_str(), meta.method.c_str(),
              meta.num_parts, meta.graph_name.c_str(), meta.graph_file.c_str());
  std::printf("graph: %lld vertices, %lld edges%s, %lld features, %d classes, %lld training vertices\n",
              static_cast<long long>(meta.num_nodes), static_cast<long long>(meta.num_edges),
              meta.directed ? " (directed)" : "", static_cast<long long>(meta.num_features), meta.num_classes,
              static_cast<long long>(meta.num_train));
  if (!meta.preprocess.empty())
    std::printf("preprocess: %s  (%s)\n", meta.preprocess.c_str(), meta.preprocess_formula.c_str());
  {
    // Weights are all-or-none across a partition's shards (the graph file has /csr/weight or not): part 0 says.
    std::error_code ec;
    const std::string first = io::shard_path(dir, 0);
    if (fs::exists(first, ec)) {
      const bool weighted = h5::File(first, h5::Mode::read).exists("/csr/weight");
      std::printf("weights   %s\n", weighted ? "yes (the shards carry /csr/weight: train --edge-weight uses them)"
                                             : "none (unweighted: train --edge-weight needs a weighted graph)");
    }
  }
  std::printf(
      "vertex order %s\n",
      meta.vertex_order == "rcm"
          ? "rcm (each shard's owned vertices in reverse Cuthill-McKee order)"
          : strformat("%s (owned vertices by ascending global id)", meta.vertex_order.c_str()).c_str());
  std::printf("%6s %12s %12s %14s %12s\n", "part", "owned", "halo", "file MiB", "feat MiB");
  int64_t total_halo = 0, max_halo = 0;
  for (int32_t p = 0; p < meta.num_parts; ++p) {
    std::error_code ec;
    const auto bytes = fs::file_size(io::shard_path(dir, p), ec);
    // Feature rows a rank holds: owned + halo rows of float32 (the input layer's activations).
    const double feature_mib =
        static_cast<double>(meta.part_owned[p] + meta.part_halo[p]) * meta.num_features * 4.0 / (1 << 20);
    std::printf("%6d %12lld %12lld %14s %12.1f\n", p, static_cast<long long>(meta.part_owned[p]),
                static_cast<long long>(meta.part_halo[p]),
                ec ? "missing" : strformat("%.1f", static_cast<double>(bytes) / (1 << 20)).c_str(),
                feature_mib);
    total_halo += meta.part_halo[p];
    max_halo = std::max(max_halo, meta.part_halo[p]);
  }
  std::printf("halo rows: total %lld, max %lld\n", static_cast<long long>(total_halo),
              static_cast<long long>(max_halo));
  print_snapshot_halo(dir);
  if (!check) return;

  const std::string graph_path = locate_graph_file(meta, dir);
  if (!io::is_current_checksum(meta.graph_checksum))
    throw UserError(dir + "/meta.json: graph.checksum " + meta.graph_checksum +
                    " was recorded by an earlier Halogen, which fingerprinted files differently: partition the "
                    "graph again with this version (`halogen partition " + graph_path + " ... --force`) to check it");
  const std::string checksum = io::file_checksum(graph_path);
  if (checksum != meta.graph_checksum)
    throw UserError(graph_path + ": checksum " + checksum + " differs from " + meta.graph_checksum +
                    " recorded in meta.json: the graph file changed since it was partitioned");
  const graph::Graph graph = io::read_graph(graph_path);
  check_partition_dir(dir, graph);
  std::printf(
      "check: OK (owned sets disjoint and covering, halos = remote neighbours grouped by owner, send "
      "plans match receivers' halos, local CSR/degrees/features/labels/splits equal the graph's%s)\n",
      graph.snapshots.empty() ? "" : "; snapshot shards and link-prediction pairs and fetch plans too");
}

}  // namespace halogen::partition
