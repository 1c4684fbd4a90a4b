#include "partition/partition_dir.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "partition/halo_plan.h"
#include "partition/link_steps.h"
#include "partition/metis_memory.h"
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

// meta.json, assignment.h5, part-*.h5, and the temporaries of each that a killed writer may leave (this
// version's `.NAME.tmp.<pid>.<random>`, earlier versions' `NAME.tmp`).
bool is_partition_file(std::string name) {
  if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos)
    name = name.substr(1, name.find(".tmp.") - 1);
  else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0)
    name.resize(name.size() - 4);
  if (name == "meta.json" || name == "assignment.h5") return true;
  return name.rfind("part-", 0) == 0 && name.size() > 8 && name.compare(name.size() - 3, 3, ".h5") == 0;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

json meta_json(const graph::Graph& graph, int64_t num_edges, int64_t num_train, const SourceFile& source,
               const PartitionRequest& request, const PartitionStats& stats, const std::vector<PhaseRecord>& phases,
               int64_t process_peak, const json& memory) {
  const AssignOptions& o = request.options;
  json meta;
  meta["format"] = "halogen.partition";
  meta["format_version"] = io::kPartitionVersion;
  meta["method"] = method_name(o.method);
  meta["num_parts"] = o.num_parts;
  meta["options"] = {
      {"objective", objective_name(o.objective)},
      {"imbalance", o.imbalance},
      {"seed", o.seed},
      {"balance", balance_name(o.balance)},
      {"refine_iterations", o.refine_iterations},
      {"part_weights", o.part_weights},
      {"vertex_order", vertex_order_name(graph.snapshots.empty() ? o.vertex_order : VertexOrder::gid)}};
  meta["command"] = request.command;
  if (graph.snapshots.size() >= 2) meta["link_negatives"] = request.link_negatives;
  meta["created_utc"] = utc_now();
  meta["graph"] = {{"file", source.path},
                   {"file_absolute", source.absolute_path},
                   {"checksum", source.checksum},
                   {"size_bytes", source.size_bytes},
                   {"name", graph.name},
                   {"num_nodes", graph.num_nodes},
                   {"num_edges", num_edges},
                   {"num_features", graph.num_features},
                   {"num_classes", graph.num_classes},
                   {"directed", graph.directed},
                   {"num_train", num_train}};
  if (!graph.preprocess.name.empty())
    meta["graph"]["preprocess"] = {{"name", graph.preprocess.name}, {"formula", graph.preprocess.formula}};
  meta["statistics"] = {{"cut_edges", stats.cut_edges},
                        {"cut_counts", graph.directed ? "directed entries" : "undirected edges"},
                        {"halo_rows_total", stats.total_halo},
                        {"halo_rows_max", stats.max_halo},
                        {"balance_vertices", stats.vertex_balance},
                        {"balance_edges", stats.edge_balance},
                        {"balance_train", stats.train_balance},
                        {"empty_parts", stats.empty_parts}};
  if (!stats.snapshot_halo_rows.empty()) {
    const std::vector<int64_t>& per_step = stats.snapshot_halo_rows;
    int64_t total = 0;
    for (int64_t rows : per_step) total += rows;
    meta["statistics"]["snapshot_halo_rows"] = {
        {"mean", static_cast<double>(total) / static_cast<double>(per_step.size())},
        {"max", *std::max_element(per_step.begin(), per_step.end())},
        {"per_step_total", per_step}};
  }
  // Per part, a constant number of keys: meta.json grows with P (every rank parses it), never with P x P. The
  // rows part p sends to each part q are in p's shard (/send/offsets); "send_peers" counts those q.
  json parts = json::array();
  for (int32_t p = 0; p < stats.num_parts; ++p) {
    parts.push_back({{"part", p},
                     {"file", fs::path(io::shard_path("", p)).filename().string()},
                     {"owned", stats.owned[p]},
                     {"halo", stats.halo[p]},
                     {"nnz", stats.nnz[p]},
                     {"train", stats.train[p]},
                     {"send", stats.send[p]},
                     {"send_peers", stats.send_peers[p]}});
  }
  meta["parts"] = parts;
  json phase_list = json::array();
  for (const PhaseRecord& phase : phases)
    phase_list.push_back({{"name", phase.name},
                          {"seconds", phase.seconds},
                          {"peak_rss_mib", static_cast<double>(phase.peak_rss_bytes) / (1 << 20)}});
  meta["phases"] = phase_list;
  meta["peak_rss_mib"] = static_cast<double>(process_peak) / (1 << 20);  // whole process, up to writing meta
  if (!memory.is_null()) meta["memory"] = memory;
  return meta;
}

void write_json_atomically(const std::string& path, const json& value) {
  io::write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary);
    out << value.dump(2) << "\n";
    out.close();
    if (!out) throw UserError(path + ": cannot write (disk full or no permission?)");
  });
}

}  // namespace

void check_output_dir(const std::string& dir, bool force) {
  HALOGEN_USER_CHECK(!dir.empty(), "--output: no output directory given");
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  HALOGEN_USER_CHECK(fs::is_directory(dir, ec), "%s: output path exists and is not a directory", dir.c_str());
  if (fs::is_empty(dir, ec)) return;
  HALOGEN_USER_CHECK(force, "%s: output directory is not empty (use --force to replace the partition in it)",
                     dir.c_str());
  // --force replaces the directory as a whole (io::AtomicDirectory): anything else in it would go too.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    HALOGEN_USER_CHECK(
        entry.is_regular_file() && is_partition_file(name),
        "%s: holds %s, which is not part of a partition; --force replaces the whole directory, "
        "so move it elsewhere first",
        dir.c_str(), name.c_str());
  }
}

void check_graph_outside_output(const std::string& graph_path, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  const fs::path output = fs::canonical(dir, ec);
  if (ec) return;
  for (fs::path p = fs::canonical(graph_path, ec); !ec && p.has_relative_path(); p = p.parent_path())
    HALOGEN_USER_CHECK(p != output,
                       "%s: the graph file %s is inside the output directory, which --force would replace "
                       "(choose another output directory)",
                       dir.c_str(), graph_path.c_str());
}

namespace {

// Rows of /node/feat read at a time: about `block_bytes`.
int64_t feature_block_rows(int64_t num_features, int64_t block_bytes) {
  return std::max<int64_t>(1, block_bytes / (4 * std::max<int64_t>(num_features, 1)));
}

}  // namespace

void validate_feature_rows(const h5::File& file, int64_t num_features, int64_t row_begin, int64_t row_end,
                           int64_t block_bytes) {
  const int64_t f = num_features, block = feature_block_rows(f, block_bytes);
  if (f == 0) return;
  for (int64_t begin = row_begin; begin < row_end; begin += block) {
    const int64_t end = std::min(row_end, begin + block);
    const std::vector<float> rows = file.read_rows<float>("/node/feat", begin, end);
    const int64_t size = static_cast<int64_t>(rows.size());
    int64_t bad = size;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t i = 0; i < size; ++i)
      if (!std::isfinite(rows[i])) bad = std::min(bad, i);
    HALOGEN_USER_CHECK(bad == size, "%s: /node/feat: row %lld, column %lld: not finite", file.path().c_str(),
                       static_cast<long long>(begin + bad / f), static_cast<long long>(bad % f));
  }
}

// Rows owned_gid (ascending) of /node/feat, read in blocks of whole rows (skipping blocks without an owned
// row) and gathered: HDF5 selections of many scattered rows are far slower than reading them all.
std::vector<float> read_owned_features(const h5::File& file, const std::vector<int64_t>& owned_gid,
                                       int64_t num_features, int64_t block_bytes) {
  const int64_t f = num_features, block = feature_block_rows(f, block_bytes);
  std::vector<float> out(owned_gid.size() * static_cast<size_t>(f));
  size_t i = 0;
  while (i < owned_gid.size()) {
    const int64_t begin = owned_gid[i], end = begin + block;
    size_t j = i;
    while (j < owned_gid.size() && owned_gid[j] < end) ++j;
    const int64_t last = owned_gid[j - 1] + 1;  // read [begin, last): no row past the last owned one
    const std::vector<float> rows = file.read_rows<float>("/node/feat", begin, last);
#pragma omp parallel for schedule(static)
    for (size_t k = i; k < j; ++k)
      std::copy_n(rows.begin() + (owned_gid[k] - begin) * f, f, out.begin() + k * f);
    i = j;
  }
  return out;
}

namespace {

// /csr of the graph file again (read and validated before); its size must not have changed.
graph::Csr reread_adjacency(const std::string& path, int64_t num_nodes, int64_t num_entries) {
  h5::File file(path, h5::Mode::read);
  graph::Csr csr;
  csr.num_rows = csr.num_cols = num_nodes;
  csr.indptr = file.read<int64_t>("/csr/indptr");
  csr.indices = file.read<int64_t>("/csr/indices");
  if (file.exists("/csr/weight")) csr.weight = file.read<float>("/csr/weight");
  HALOGEN_USER_CHECK(static_cast<int64_t>(csr.indptr.size()) == num_nodes + 1 && csr.nnz() == num_entries &&
                         csr.indptr.back() == num_entries,
                     "%s: /csr: changed while it was being partitioned", path.c_str());
  return csr;
}

// Partition, halo plan, shards, meta.json. `assign` computes the assignment (it may release and restore
// graph.adjacency); `features` is the graph file when `graph` holds no feature values (each shard then
// reads its owned rows of /node/feat); `memory` goes to meta.json["memory"] when not null.
PartitionResult write_partition_directory(const graph::Graph& graph, const SourceFile& source,
                                          const PartitionRequest& request, PhaseLog& phases,
                                          const std::function<std::vector<int32_t>()>& assign,
                                          const h5::File* features, json* memory) {
  const AssignOptions& options = request.options;
  phases.begin("partition");
  std::vector<int32_t> part_of = assign();
  phases.end();
  log::info(strformat("partition: %s into %d parts in %.2f s", method_name(options.method), options.num_parts,
                      phases.phases().back().seconds));
  if (!graph.snapshots.empty() && options.vertex_order != VertexOrder::gid)
    log::info(
        strformat("vertex order: gid (a dynamic graph's snapshot and link shards are built in gid order; "
                  "--vertex-order %s applies to static graphs)",
                  vertex_order_name(options.vertex_order)));

  phases.begin("halo plan");
  io::write_assignment(io::assignment_path(request.output_dir), part_of, options.num_parts);
  io::fault_point("assignment");
  HaloPlan plan = build_halo_plan(graph.adjacency, std::move(part_of), options.num_parts);
  PartitionResult result;
  result.stats = compute_statistics(graph, plan);
  phases.end();

  // Link-prediction negatives of every step, drawn once for all parts (they do not depend on P).
  std::vector<LinkNegatives> link_negatives;
  if (graph.snapshots.size() >= 2) {
    HALOGEN_USER_CHECK(request.link_negatives >= 1, "--link-negatives: %lld; at least 1 is needed",
                       static_cast<long long>(request.link_negatives));
    phases.begin("link pairs");
    link_negatives = sample_all_link_negatives(graph, request.link_negatives, options.seed);
    phases.end();
  }

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
        if (features && graph.num_features > 0)
          shard.features = read_owned_features(*features, shard.owned_gid, graph.num_features,
                                               request.feature_block_bytes);
        // Snapshots and link steps are built in gid order (plan.local_of): dynamic graphs keep it.
        if (graph.snapshots.empty()) apply_vertex_order(shard, options.vertex_order);
        if (!graph.snapshots.empty()) {
          shard.snapshots = build_shard_snapshots(graph, plan, shard);
          snapshot_halo_rows.resize(shard.snapshots.size(), 0);
          for (size_t t = 0; t < shard.snapshots.size(); ++t)
            snapshot_halo_rows[t] += shard.snapshots[t].num_halo();
        }
        if (!link_negatives.empty()) {
          shard.link_negatives = request.link_negatives;
          shard.link_steps = build_shard_link_steps(graph, link_negatives, plan, shard);
        }
      }
      {
        ScopedTimer timer(&write_ms);
        io::write_shard(io::shard_path(request.output_dir, p), shard);
      }
      if (p == 0) io::fault_point("shard");
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
      log::info(
          strformat("snapshots: %zu, halo rows per step (all parts) mean %.1f max %lld (union halo %lld)",
                    snapshot_halo_rows.size(),
                    static_cast<double>(total) / static_cast<double>(snapshot_halo_rows.size()),
                    static_cast<long long>(largest), static_cast<long long>(result.stats.total_halo)));
    }
  }
  phases.end();

  result.phases = phases.phases();
  result.process_peak_rss_bytes = peak_rss_bytes();
  write_json_atomically((fs::path(request.output_dir) / "meta.json").string(),
                        meta_json(graph, graph.num_edges(), static_cast<int64_t>(graph.train.size()), source,
                                  request, result.stats, result.phases, result.process_peak_rss_bytes,
                                  memory ? *memory : json()));
  return result;
}

// write_partition_directory into a temporary sibling of request.output_dir, swapped in when complete.
PartitionResult write_partition_atomically(const graph::Graph& graph, const SourceFile& source,
                                           const PartitionRequest& request, PhaseLog& phases,
                                           const std::function<std::vector<int32_t>()>& assign,
                                           const h5::File* features, json* memory) {
  validate_options(graph, request.options);
  check_output_dir(request.output_dir, request.force);
  io::AtomicDirectory output(request.output_dir);
  PartitionRequest staged = request;
  staged.output_dir = output.temp_path();
  try {
    PartitionResult result =
        write_partition_directory(graph, source, staged, phases, assign, features, memory);
    io::fault_point("meta");
    output.commit();
    return result;
  } catch (const UserError& e) {
    throw UserError(output.name_final(e.what()));  // name the output directory, not the temporary one
  }
}

}  // namespace

PartitionResult write_partition(const graph::Graph& graph, const SourceFile& source,
                                const PartitionRequest& request, PhaseLog& phases) {
  check_output_dir(request.output_dir, request.force);
  const io::OutputLock lock(request.output_dir,
                            /*create_parent=*/true);  // held until the new directory is in place
  return write_partition_atomically(
      graph, source, request, phases, [&] { return assign_parts(graph, request.options); }, nullptr, nullptr);
}

void write_partition_meta(const std::string& dir, const graph::Graph& graph, int64_t num_edges, int64_t num_train,
                          const SourceFile& source, const PartitionRequest& request, const PartitionResult& result,
                          const std::string& memory_json) {
  write_json_atomically((fs::path(dir) / "meta.json").string(),
                        meta_json(graph, num_edges, num_train, source, request, result.stats, result.phases,
                                  result.process_peak_rss_bytes,
                                  memory_json.empty() ? json() : json::parse(memory_json)));
}

int64_t memory_budget_bytes(const PartitionRequest& request, int64_t file_size_bytes) {
  if (request.memory_limit_bytes > 0) return request.memory_limit_bytes;
  return std::max<int64_t>(3 * file_size_bytes, kMinimumMemoryBudgetBytes);
}

PartitionResult partition_graph_file(const PartitionRequest& request) {
  HALOGEN_USER_CHECK(request.options.num_parts >= 1, "--parts: %d parts requested; at least 1 is needed",
                     request.options.num_parts);
  check_graph_outside_output(request.graph_path, request.output_dir);
  check_output_dir(request.output_dir, request.force);
  const io::OutputLock lock(request.output_dir,
                            /*create_parent=*/true);  // held until the new directory is in place
  if (request.options.method == Method::metis) {
    // Before anything is read: a graph beyond METIS's 32-bit idx_t is refused from its header, in one line.
    const h5::File header(request.graph_path, h5::Mode::read);
    io::check_graph_format(header);
    check_metis_limits(header.attr_int("num_nodes"), header.attr_int("num_edges"));
  }
  PhaseLog phases;
  phases.begin("read graph");
  SourceFile source = describe_source_file(request.graph_path);
  // Everything but the feature values, which are checked here in blocks and read per shard later.
  graph::Graph graph = io::read_graph_without_features(request.graph_path);
  const h5::File features(request.graph_path, h5::Mode::read);
  validate_feature_rows(features, graph.num_features, 0, graph.num_nodes, request.feature_block_bytes);
  phases.end();
  validate_options(graph, request.options);  // before any output, so a rejected run prints one line
  log::info(strformat("read %s: %lld vertices, %lld edges in %.2f s", request.graph_path.c_str(),
                      static_cast<long long>(graph.num_nodes), static_cast<long long>(graph.num_edges()),
                      phases.phases().back().seconds));

  const int64_t budget = memory_budget_bytes(request, source.size_bytes);
  json memory = {{"budget_mib", static_cast<double>(budget) / (1 << 20)}};
  auto assign = [&]() -> std::vector<int32_t> {
    if (request.options.method != Method::metis) return assign_parts(graph, request.options);
    MetisMemoryReport report;
    const int64_t n = graph.num_nodes, entries = graph.num_edges();
    std::vector<int32_t> part_of = assign_metis_within(
        graph, request.options, budget, [&] { return reread_adjacency(request.graph_path, n, entries); },
        &report);
    memory["metis_estimated_mib"] = static_cast<double>(report.estimated_bytes) / (1 << 20);
    memory["metis_sparsified"] = report.sparsified;
    if (report.sparsified) {
      memory["metis_keep_degree"] = report.keep_degree;
      memory["metis_entries"] = report.metis_entries;
      memory["entries"] = report.entries;
      memory["cut_weight_before_refinement"] = report.cut_before_refinement;
      memory["cut_weight_after_refinement"] = report.cut_after_refinement;
      log::info(strformat(
          "partition: METIS on the whole graph would need about %.0f MiB, more than the %.0f MiB memory "
          "budget leaves it; METIS partitioned a sparsified graph (%lld of %lld entries, keep degree "
          "%.1f), refined on the full graph: cut weight %lld -> %lld",
          static_cast<double>(estimate_metis_bytes(n, report.entries, request.options.num_parts)) / (1 << 20),
          static_cast<double>(budget) / (1 << 20), static_cast<long long>(report.metis_entries),
          static_cast<long long>(report.entries), report.keep_degree,
          static_cast<long long>(report.cut_before_refinement),
          static_cast<long long>(report.cut_after_refinement)));
    }
    return part_of;
  };
  return write_partition_atomically(graph, source, request, phases, assign, &features, &memory);
}

}  // namespace halogen::partition
