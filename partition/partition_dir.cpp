#include "partition/partition_dir.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/graph_file.h"
#include "io/part_file.h"
#include "partition/halo_plan.h"
#include "partition/snapshot_shard.h"

namespace halogen::partition {

namespace fs = std::filesystem;
using json = nlohmann::json;

SourceFile describe_source_file(const std::string& path) {
  SourceFile source;
  source.path = path;
  std::error_code ec;
  source.absolute_path = fs::absolute(path, ec).lexically_normal().string();
  source.size_bytes = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw UserError(path + ": no such file");
  source.checksum = io::file_checksum(path);
  return source;
}

namespace {

bool is_partition_file(const std::string& name) {
  if (name == "meta.json" || name == "meta.json.tmp" || name == "assignment.h5" ||
      name == "assignment.h5.tmp")
    return true;
  return name.rfind("part-", 0) == 0 &&
         (name.size() >= 3 && (name.compare(name.size() - 3, 3, ".h5") == 0 ||
                               (name.size() >= 7 && name.compare(name.size() - 7, 7, ".h5.tmp") == 0)));
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

json meta_json(const graph::Graph& graph, const SourceFile& source, const PartitionRequest& request,
               const PartitionStats& stats, const std::vector<PhaseRecord>& phases, int64_t process_peak) {
  const AssignOptions& o = request.options;
  json meta;
  meta["format"] = "halogen.partition";
  meta["version"] = 1;
  meta["method"] = method_name(o.method);
  meta["num_parts"] = o.num_parts;
  meta["options"] = {{"objective", objective_name(o.objective)},
                     {"imbalance", o.imbalance},
                     {"seed", o.seed},
                     {"balance", balance_name(o.balance)},
                     {"refine_iterations", o.refine_iterations},
                     {"part_weights", o.part_weights}};
  meta["command"] = request.command;
  meta["created_utc"] = utc_now();
  meta["graph"] = {{"file", source.path},
                   {"file_absolute", source.absolute_path},
                   {"checksum", source.checksum},
                   {"size_bytes", source.size_bytes},
                   {"name", graph.name},
                   {"num_nodes", graph.num_nodes},
                   {"num_edges", graph.num_edges()},
                   {"num_features", graph.num_features},
                   {"num_classes", graph.num_classes},
                   {"directed", graph.directed},
                   {"num_train", static_cast<int64_t>(graph.train.size())}};
  json rows_sent = json::array();
  for (int32_t p = 0; p < stats.num_parts; ++p) {
    json row = json::array();
    for (int32_t q = 0; q < stats.num_parts; ++q)
      row.push_back(stats.rows_sent[static_cast<size_t>(p) * stats.num_parts + q]);
    rows_sent.push_back(row);
  }
  meta["statistics"] = {{"cut_edges", stats.cut_edges},
                        {"cut_counts", graph.directed ? "directed entries" : "undirected edges"},
                        {"halo_rows_total", stats.total_halo},
                        {"halo_rows_max", stats.max_halo},
                        {"balance_vertices", stats.vertex_balance},
                        {"balance_edges", stats.edge_balance},
                        {"balance_train", stats.train_balance},
                        {"empty_parts", stats.empty_parts},
                        {"rows_sent", rows_sent}};
  if (!stats.snapshot_halo_rows.empty()) {
    const std::vector<int64_t>& per_step = stats.snapshot_halo_rows;
    int64_t total = 0;
    for (int64_t rows : per_step) total += rows;
    meta["statistics"]["snapshot_halo_rows"] = {
        {"mean", static_cast<double>(total) / static_cast<double>(per_step.size())},
        {"max", *std::max_element(per_step.begin(), per_step.end())},
        {"per_step_total", per_step}};
  }
  json parts = json::array();
  for (int32_t p = 0; p < stats.num_parts; ++p)
    parts.push_back({{"part", p},
                     {"file", fs::path(io::shard_path("", p)).filename().string()},
                     {"owned", stats.owned[p]},
                     {"halo", stats.halo[p]},
                     {"nnz", stats.nnz[p]},
                     {"train", stats.train[p]},
                     {"send", stats.send[p]}});
  meta["parts"] = parts;
  json phase_list = json::array();
  for (const PhaseRecord& phase : phases)
    phase_list.push_back({{"name", phase.name},
                          {"seconds", phase.seconds},
                          {"peak_rss_mib", static_cast<double>(phase.peak_rss_bytes) / (1 << 20)}});
  meta["phases"] = phase_list;
  meta["peak_rss_mib"] = static_cast<double>(process_peak) / (1 << 20);  // whole process, up to writing meta
  return meta;
}

void write_json_atomically(const std::string& path, const json& value) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << value.dump(2) << "\n";
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw UserError(path + ": cannot write (disk full or no permission?)");
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw UserError(path + ": cannot rename the temporary file into place: " + ec.message());
}

}  // namespace

void check_output_dir(const std::string& dir, bool force) {
  HALOGEN_USER_CHECK(!dir.empty(), "--output: no output directory given");
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  HALOGEN_USER_CHECK(fs::is_directory(dir, ec), "%s: output path exists and is not a directory", dir.c_str());
  HALOGEN_USER_CHECK(force || fs::is_empty(dir, ec),
                     "%s: output directory is not empty (use --force to overwrite its partition files)",
                     dir.c_str());
}

void prepare_output_dir(const std::string& dir, bool force) {
  check_output_dir(dir, force);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(dir + ": cannot create the output directory: " + ec.message());
  if (!force) return;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && is_partition_file(entry.path().filename().string())) {
      fs::remove(entry.path(), ec);
      if (ec)
        throw UserError(entry.path().string() + ": cannot remove the old partition file: " + ec.message());
    }
  }
}

PartitionResult write_partition(const graph::Graph& graph, const SourceFile& source,
                                const PartitionRequest& request, PhaseLog& phases) {
  const AssignOptions& options = request.options;
  validate_options(graph, options);
  prepare_output_dir(request.output_dir, request.force);

  phases.begin("partition");
  std::vector<int32_t> part_of = assign_parts(graph, options);
  phases.end();
  log::info(strformat("partition: %s into %d parts in %.2f s", method_name(options.method), options.num_parts,
                      phases.phases().back().seconds));

  phases.begin("halo plan");
  io::write_assignment(io::assignment_path(request.output_dir), part_of, options.num_parts);
  HaloPlan plan = build_halo_plan(graph.adjacency, std::move(part_of), options.num_parts);
  PartitionResult result;
  result.stats = compute_statistics(graph, plan);
  phases.end();

  phases.begin("write shards");
  {
    log::Progress progress("writing shards", options.num_parts);
    double build_ms = 0, write_ms = 0;
    std::vector<int64_t>& snapshot_halo_rows = result.stats.snapshot_halo_rows;  // dynamic graphs only
    for (int32_t p = 0; p < options.num_parts; ++p) {
      graph::Shard shard;
      {
        ScopedTimer timer(&build_ms);
        shard = build_shard(graph, plan, p);
        if (!graph.snapshots.empty()) {
          shard.snapshots = build_shard_snapshots(graph, plan, shard);
          snapshot_halo_rows.resize(shard.snapshots.size(), 0);
          for (size_t t = 0; t < shard.snapshots.size(); ++t)
            snapshot_halo_rows[t] += shard.snapshots[t].num_halo();
        }
      }
      {
        ScopedTimer timer(&write_ms);
        io::write_shard(io::shard_path(request.output_dir, p), shard);
      }
      progress.update(p + 1);
    }
    progress.finish();
    log::info(strformat("shards: built in %.2f s, written in %.2f s", build_ms / 1e3, write_ms / 1e3));
    if (!snapshot_halo_rows.empty()) {
      int64_t total = 0, largest = 0;
      for (int64_t rows : snapshot_halo_rows) {
        total += rows;
        largest = std::max(largest, rows);
      }
      log::info(strformat("snapshots: %zu, halo rows per step (all parts) mean %.1f max %lld (union halo %lld)",
                          snapshot_halo_rows.size(),
                          static_cast<double>(total) / static_cast<double>(snapshot_halo_rows.size()),
                          static_cast<long long>(largest), static_cast<long long>(result.stats.total_halo)));
    }
  }
  phases.end();

  result.phases = phases.phases();
  result.process_peak_rss_bytes = peak_rss_bytes();
  write_json_atomically(
      (fs::path(request.output_dir) / "meta.json").string(),
      meta_json(graph, source, request, result.stats, result.phases, result.process_peak_rss_bytes));
  return result;
}

PartitionResult partition_graph_file(const PartitionRequest& request) {
  HALOGEN_USER_CHECK(request.options.num_parts >= 1, "--parts: %d parts requested; at least 1 is needed",
                     request.options.num_parts);
  check_output_dir(request.output_dir, request.force);
  PhaseLog phases;
  phases.begin("read graph");
  SourceFile source = describe_source_file(request.graph_path);
  graph::Graph graph = io::read_graph(request.graph_path);
  phases.end();
  validate_options(graph, request.options);  // before any output, so a rejected run prints one line
  log::info(strformat("read %s: %lld vertices, %lld edges in %.2f s", request.graph_path.c_str(),
                      static_cast<long long>(graph.num_nodes), static_cast<long long>(graph.num_edges()),
                      phases.phases().back().seconds));
  return write_partition(graph, source, request, phases);
}

}  // namespace halogen::partition
