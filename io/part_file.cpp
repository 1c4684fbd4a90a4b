#include "io/part_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/json_text.h"

namespace halogen::io {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

template <typename T>
T json_get(const json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) throw UserError(where + ": key \"" + key + "\" missing");
  // Integers must be stored as integers within T's range: 1e10 must not become -2147483648 in an int32.
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using Limits = std::numeric_limits<T>;
    const bool in_range =
        it->is_number_integer() && !it->is_number_unsigned()
            ? it->template get<int64_t>() >= Limits::min() && it->template get<int64_t>() <= Limits::max()
            : it->is_number_unsigned() && it->template get<uint64_t>() <= static_cast<uint64_t>(Limits::max());
    if (!in_range)
      throw UserError(where + ": key \"" + key + "\" must be an integer in [" +
                      std::to_string(std::numeric_limits<T>::min()) + ", " +
                      std::to_string(std::numeric_limits<T>::max()) + "], found " + it->dump().substr(0, 40));
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw UserError(where + ": key \"" + key + "\" has the wrong type");
  }
}

// Throws "<file>: <dataset>: <what>" when `ok` is false.
void require(bool ok, const std::string& file, const std::string& dataset, const std::string& what) {
  if (!ok) throw UserError(file + ": " + dataset + ": " + what);
}

void check_offsets(const std::vector<int64_t>& offsets, int64_t parts, int64_t total, const std::string& file,
                   const std::string& dataset) {
  require(static_cast<int64_t>(offsets.size()) == parts + 1, file, dataset,
          "expected " + std::to_string(parts + 1) + " entries, found " + std::to_string(offsets.size()));
  require(offsets.front() == 0, file, dataset, "must start at 0");
  for (size_t i = 1; i < offsets.size(); ++i) {
    if (offsets[i] < offsets[i - 1]) require(false, file, dataset, "not monotone at index " + std::to_string(i));
  }
  require(offsets.back() == total, file, dataset,
          "ends at " + std::to_string(offsets.back()) + ", expected " + std::to_string(total));
}

template <typename T>
void check_ascending_in(const std::vector<T>& ids, int64_t begin, int64_t end, int64_t lo, int64_t hi,
                        const std::string& file, const std::string& dataset) {
  for (int64_t i = begin; i < end; ++i) {  // messages are built only on failure (this runs per element)
    if (!(ids[i] >= lo && ids[i] < hi)) {
      require(false, file, dataset,
              "value " + std::to_string(ids[i]) + " at index " + std::to_string(i) + " outside [" +
                  std::to_string(lo) + "," + std::to_string(hi) + ")");
    }
    if (!(i == begin || ids[i] > ids[i - 1])) {
      require(false, file, dataset, "not strictly ascending at index " + std::to_string(i));
    }
  }
}

// Distinct values in [lo, hi), in any order (/owned/gid: ascending in gid order, not in rcm order).
void check_distinct_in(const std::vector<int64_t>& ids, int64_t lo, int64_t hi, const std::string& file,
                       const std::string& dataset) {
  if (std::is_sorted(ids.begin(), ids.end()))
    return check_ascending_in(ids, 0, static_cast<int64_t>(ids.size()), lo, hi, file, dataset);
  std::vector<int64_t> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  if (!(sorted.front() >= lo && sorted.back() < hi))
    require(false, file, dataset,
            "value " + std::to_string(sorted.front() < lo ? sorted.front() : sorted.back()) + " outside [" +
                std::to_string(lo) + "," + std::to_string(hi) + ")");
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end())
    require(false, file, dataset, "value " + std::to_string(*twice) + " listed twice");
}

// Root attribute format_version (an earlier file's version) of a shard or assignment file: kPartitionVersion;
// version 1 (no checksums) asks for a new partition.
void check_partition_file_version(const h5::File& file, const char* what) {
  const std::string& path = file.path();
  const int64_t version = read_format_version(file);
  require(version != -1, path, "/", "attribute format_version missing");
  require(version != 1, path, "/",
          std::string("version 1 ") + what +
              ", written by an older Halogen without checksums: partition the graph again with this version "
              "(`halogen partition ... --force`)");
  require(version == kPartitionVersion, path, "/",
          "version " + std::to_string(version) + " is not supported (expected " +
              std::to_string(kPartitionVersion) + ")");
}

std::string snapshot_group(size_t t) {
  char name[32];
  std::snprintf(name, sizeof(name), "/snapshots/%05zu", t);
  return name;
}

// Dynamic graphs: /snapshots/NNNNN/{halo/rows, halo/recv_offsets, send/idx, send/offsets, csr/indptr,
// csr/indices, csr/weight (optional), degree/owned, degree/halo} (graph/shard.h, ShardSnapshot).
void write_shard_snapshots(h5::File& file, const graph::Shard& shard) {
  file.set_attr("num_snapshots", static_cast<int64_t>(shard.snapshots.size()));
  for (size_t t = 0; t < shard.snapshots.size(); ++t) {
    const graph::ShardSnapshot& s = shard.snapshots[t];
    const std::string group = snapshot_group(t);
    file.write(group + "/halo/rows", s.halo_rows);
    file.write(group + "/halo/recv_offsets", s.plan.recv_offsets);
    file.write(group + "/send/idx", s.plan.send_idx);
    file.write(group + "/send/offsets", s.plan.send_offsets);
    file.write(group + "/csr/indptr", s.indptr);
    file.write(group + "/csr/indices", s.indices);
    if (!s.weight.empty()) file.write(group + "/csr/weight", s.weight);
    file.write(group + "/degree/owned", s.degree_owned);
    file.write(group + "/degree/halo", s.degree_halo);
  }
}

// Reads and checks every snapshot against the shard's own (union) plan: halo rows ascending inside the
// union halo and in the owner group their recv_offsets say, send rows owned and ascending per destination,
// columns within the snapshot's compact local ids.
void read_shard_snapshots(const h5::File& file, const std::string& path, graph::Shard& shard) {
  const int64_t count = file.has_attr("num_snapshots") ? file.attr_int("num_snapshots") : 0;
  const std::vector<std::string> steps =
      file.exists("/snapshots") ? file.list("/snapshots") : std::vector<std::string>{};
  require(static_cast<int64_t>(steps.size()) == count, path, "/snapshots",
          std::to_string(steps.size()) + " groups, but attribute num_snapshots is " + std::to_string(count));
  const int64_t n_own = shard.num_owned(), n_union_halo = shard.num_halo(), parts = shard.num_parts;
  const int part = shard.part;
  for (int64_t t = 0; t < count; ++t) {
    const std::string group = snapshot_group(static_cast<size_t>(t));
    require(steps[t] == group.substr(11), path, "/snapshots/" + steps[t], "expected " + group);
    graph::ShardSnapshot s;
    s.halo_rows = file.read<int64_t>(group + "/halo/rows");
    s.plan.recv_offsets = file.read<int64_t>(group + "/halo/recv_offsets");
    const int64_t n_halo = s.num_halo();
    check_offsets(s.plan.recv_offsets, parts, n_halo, path, group + "/halo/recv_offsets");
    check_ascending_in(s.halo_rows, 0, n_halo, 0, n_union_halo, path, group + "/halo/rows");
    for (int64_t q = 0; q < parts; ++q)
      check_ascending_in(s.halo_rows, s.plan.recv_offsets[q], s.plan.recv_offsets[q + 1], shard.plan.recv_offsets[q],
                         shard.plan.recv_offsets[q + 1], path, group + "/halo/rows");
    s.plan.send_idx = file.read<int32_t>(group + "/send/idx");
    s.plan.send_offsets = file.read<int64_t>(group + "/send/offsets");
    check_offsets(s.plan.send_offsets, parts, static_cast<int64_t>(s.plan.send_idx.size()), path,
                  group + "/send/offsets");
    require(s.plan.send_offsets[part] == s.plan.send_offsets[part + 1], path, group + "/send/offsets",
            "rows sent to self");
    const std::string send_idx_name = group + "/send/idx";
    for (int64_t q = 0; q < parts; ++q)
      check_ascending_in(s.plan.send_idx, s.plan.send_offsets[q], s.plan.send_offsets[q + 1], 0, n_own, path,
                         send_idx_name);
    s.indptr = file.read<int64_t>(group + "/csr/indptr");
    s.indices = file.read<int32_t>(group + "/csr/indices");
    check_offsets(s.indptr, n_own, s.nnz(), path, group + "/csr/indptr");
    const std::string indices_name = group + "/csr/indices";
    for (int64_t r = 0; r < n_own; ++r)
      check_ascending_in(s.indices, s.indptr[r], s.indptr[r + 1], 0, n_own + n_halo, path, indices_name);
    if (file.exists(group + "/csr/weight")) {
      s.weight = file.read<float>(group + "/csr/weight");
      require(static_cast<int64_t>(s.weight.size()) == s.nnz(), path, group + "/csr/weight",
              "length differs from csr/indices");
    }
    s.degree_owned = file.read<int64_t>(group + "/degree/owned");
    s.degree_halo = file.read<int64_t>(group + "/degree/halo");
    require(static_cast<int64_t>(s.degree_owned.size()) == n_own, path, group + "/degree/owned",
            "length differs from /owned/gid");
    require(static_cast<int64_t>(s.degree_halo.size()) == n_halo, path, group + "/degree/halo",
            "length differs from halo/rows");
    shard.snapshots.push_back(std::move(s));
  }
}

// /node/label_offset and /node/label_scale (float64 [n_own], optional: a standardisation's way back to the
// source's units; partitions made before they were written have none): both or neither, only with targets
// and a transform recorded in meta.json, finite, scales positive.
void read_target_record(const h5::File& file, const std::string& path, graph::Shard& s) {
  const bool has_offset = file.exists("/node/label_offset"), has_scale = file.exists("/node/label_scale");
  if (!has_offset && !has_scale) return;
  require(has_offset && has_scale, path, has_offset ? "/node/label_scale" : "/node/label_offset",
          "missing (the other of /node/label_offset and /node/label_scale is present)");
  require(!s.targets.empty() && !s.target_preprocess.empty(), path, "/node/label_scale",
          "present, but the shard has no regression targets or meta.json records no transform (graph.preprocess)");
  s.target_offset = file.read<double>("/node/label_offset");
  s.target_scale = file.read<double>("/node/label_scale");
  const int64_t n_own = s.num_owned();
  require(static_cast<int64_t>(s.target_offset.size()) == n_own, path, "/node/label_offset",
          "length differs from /owned/gid");
  require(static_cast<int64_t>(s.target_scale.size()) == n_own, path, "/node/label_scale",
          "length differs from /owned/gid");
  for (int64_t i = 0; i < n_own; ++i) {
    if (!std::isfinite(s.target_offset[i]))
      require(false, path, "/node/label_offset", "not finite at index " + std::to_string(i));
    if (!(std::isfinite(s.target_scale[i]) && s.target_scale[i] > 0))
      require(false, path, "/node/label_scale",
              "value " + std::to_string(s.target_scale[i]) + " at index " + std::to_string(i) +
                  " is not a finite positive scale");
  }
}

std::string link_group(size_t s) {
  char name[32];
  std::snprintf(name, sizeof(name), "/link/%05zu", s);
  return name;
}

// Link prediction: root attribute link_negatives and per step /link/NNNNN/{sources, source_offsets, target,
// label, fetch/gid, fetch/recv_offsets, send/idx, send/offsets} (graph/shard.h, ShardLinkStep).
void write_shard_link_steps(h5::File& file, const graph::Shard& shard) {
  if (shard.link_negatives == 0) return;
  file.set_attr("link_negatives", shard.link_negatives);
  file.set_attr("num_link_steps", static_cast<int64_t>(shard.link_steps.size()));
  for (size_t s = 0; s < shard.link_steps.size(); ++s) {
    const graph::ShardLinkStep& step = shard.link_steps[s];
    const std::string group = link_group(s);
    file.write(group + "/sources", step.sources);
    file.write(group + "/source_offsets", step.source_offsets);
    file.write(group + "/target", step.target);
    file.write(group + "/label", step.label);
    file.write(group + "/fetch/gid", step.fetched_gid);
    file.write(group + "/fetch/recv_offsets", step.plan.recv_offsets);
    file.write(group + "/send/idx", step.plan.send_idx);
    file.write(group + "/send/offsets", step.plan.send_offsets);
  }
}

// Reads and checks every link step against the shard: sources owned and ascending, pair offsets monotone,
// targets within owned + fetched rows, labels 0/1, fetched gids in range, none owned here, ascending within
// their owner group, send rows owned and ascending per destination, nothing sent to or fetched from self.
void read_shard_link_steps(const h5::File& file, const std::string& path, graph::Shard& shard) {
  if (!file.has_attr("link_negatives")) {
    require(!file.exists("/link"), path, "/link", "present, but root attribute link_negatives is missing");
    return;
  }
  shard.link_negatives = file.attr_int("link_negatives");
  require(shard.link_negatives >= 1, path, "/", "attribute link_negatives must be >= 1");
  require(file.has_attr("num_link_steps"), path, "/", "attribute num_link_steps missing");
  const int64_t count = file.attr_int("num_link_steps");
  const int64_t expected = std::max<int64_t>(static_cast<int64_t>(shard.snapshots.size()) - 1, 0);
  require(count == expected, path, "/",
          "attribute num_link_steps is " + std::to_string(count) + ", expected " + std::to_string(expected) +
              " (snapshots - 1)");
  const std::vector<std::string> steps = file.exists("/link") ? file.list("/link") : std::vector<std::string>{};
  require(static_cast<int64_t>(steps.size()) == count, path, "/link",
          std::to_string(steps.size()) + " groups, but attribute num_link_steps is " + std::to_string(count));
  const int64_t n_own = shard.num_owned(), n = shard.global_num_nodes, parts = shard.num_parts;
  const int part = shard.part;
  for (int64_t t = 0; t < count; ++t) {
    const std::string group = link_group(static_cast<size_t>(t));
    require(steps[t] == group.substr(6), path, "/link/" + steps[t], "expected " + group);
    graph::ShardLinkStep s;
    s.sources = file.read<int32_t>(group + "/sources");
    s.source_offsets = file.read<int64_t>(group + "/source_offsets");
    s.target = file.read<int32_t>(group + "/target");
    s.label = file.read<uint8_t>(group + "/label");
    s.fetched_gid = file.read<int64_t>(group + "/fetch/gid");
    s.plan.recv_offsets = file.read<int64_t>(group + "/fetch/recv_offsets");
    s.plan.send_idx = file.read<int32_t>(group + "/send/idx");
    s.plan.send_offsets = file.read<int64_t>(group + "/send/offsets");
    const int64_t sources = static_cast<int64_t>(s.sources.size()), pairs = s.num_pairs();
    check_ascending_in(s.sources, 0, sources, 0, n_own, path, group + "/sources");
    check_offsets(s.source_offsets, sources, pairs, path, group + "/source_offsets");
    for (int64_t i = 0; i < sources; ++i)
      require(s.source_offsets[i + 1] > s.source_offsets[i], path, group + "/source_offsets",
              "source " + std::to_string(i) + " has no pairs");
    require(static_cast<int64_t>(s.label.size()) == pairs, path, group + "/label", "length differs from target");
    for (int64_t k = 0; k < pairs; ++k)
      if (s.label[k] > 1) require(false, path, group + "/label", "value at index " + std::to_string(k) + " not 0 or 1");
    const int64_t fetched = s.num_fetched();
    check_offsets(s.plan.recv_offsets, parts, fetched, path, group + "/fetch/recv_offsets");
    require(s.plan.recv_offsets[part] == s.plan.recv_offsets[part + 1], path, group + "/fetch/recv_offsets",
            "rows fetched from self");
    for (int64_t q = 0; q < parts; ++q)
      check_ascending_in(s.fetched_gid, s.plan.recv_offsets[q], s.plan.recv_offsets[q + 1], 0, n, path,
                         group + "/fetch/gid");
    for (int64_t k = 0; k < pairs; ++k)
      if (!(s.target[k] >= 0 && s.target[k] < n_own + fetched))
        require(false, path, group + "/target",
                "row " + std::to_string(s.target[k]) + " at index " + std::to_string(k) + " outside [0," +
                    std::to_string(n_own + fetched) + ")");
    check_offsets(s.plan.send_offsets, parts, static_cast<int64_t>(s.plan.send_idx.size()), path,
                  group + "/send/offsets");
    require(s.plan.send_offsets[part] == s.plan.send_offsets[part + 1], path, group + "/send/offsets",
            "rows sent to self");
    for (int64_t q = 0; q < parts; ++q)
      check_ascending_in(s.plan.send_idx, s.plan.send_offsets[q], s.plan.send_offsets[q + 1], 0, n_own, path,
                         group + "/send/idx");
    shard.link_steps.push_back(std::move(s));
  }
}

}  // namespace

std::string shard_path(const std::string& dir, int part) {
  char name[32];
  std::snprintf(name, sizeof(name), "part-%05d.h5", part);
  return (fs::path(dir) / name).string();
}

std::string assignment_path(const std::string& dir) {
  return (fs::path(dir) / "assignment.h5").string();
}

PartitionMeta read_partition_meta(const std::string& dir) {
  const std::string path = (fs::path(dir) / "meta.json").string();
  std::ifstream in(path);
  if (!in)
    throw UserError(path + ": no such file (is " + dir +
                    " a partition directory made by `halogen partition`?)");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw UserError(path + ": is a directory, expected the partition's JSON file");
  json root;
  try {
    root = json::parse(in);
  } catch (const std::exception& e) {  // json::exception, or std::ios_base::failure from a failing read
    throw UserError(path + ": not valid JSON (" + json_reason(e.what()) + ")");
  }
  if (!root.is_object()) throw UserError(path + ": not a JSON object");
  const std::string format = json_get<std::string>(root, "format", path);
  if (format != "halogen.partition")
    throw UserError(path + ": format is \"" + format + "\", expected \"halogen.partition\"");
  // format_version; meta.json files before it say version.
  const int version = json_get<int>(root, root.contains("format_version") ? "format_version" : "version", path);
  if (version == 1)
    throw UserError(path + ": version 1, written by an older Halogen without checksums: partition the graph "
                    "again with this version (`halogen partition GRAPH -k " +
                    (root.contains("num_parts") ? root["num_parts"].dump() : std::string("P")) + " -o " + dir +
                    " --force`)");
  if (version != kPartitionVersion)
    throw UserError(path + ": version " + std::to_string(version) + " is not supported (expected " +
                    std::to_string(kPartitionVersion) + ")");

  PartitionMeta meta;
  meta.method = json_get<std::string>(root, "method", path);
  meta.num_parts = json_get<int32_t>(root, "num_parts", path);
  if (meta.num_parts < 1) throw UserError(path + ": num_parts must be >= 1");
  if (!root.contains("graph") || !root["graph"].is_object())
    throw UserError(path + ": key \"graph\" missing");
  const json& graph = root["graph"];
  const std::string where = path + ": graph";
  meta.graph_file = json_get<std::string>(graph, "file", where);
  meta.graph_file_absolute = json_get<std::string>(graph, "file_absolute", where);
  meta.graph_checksum = json_get<std::string>(graph, "checksum", where);
  meta.graph_file_size = json_get<int64_t>(graph, "size_bytes", where);
  meta.graph_name = json_get<std::string>(graph, "name", where);
  meta.num_nodes = json_get<int64_t>(graph, "num_nodes", where);
  meta.num_edges = json_get<int64_t>(graph, "num_edges", where);
  meta.num_features = json_get<int64_t>(graph, "num_features", where);
  meta.num_classes = json_get<int32_t>(graph, "num_classes", where);
  meta.directed = json_get<bool>(graph, "directed", where);
  meta.num_train = json_get<int64_t>(graph, "num_train", where);
  if (graph.contains("preprocess")) {
    meta.preprocess = json_get<std::string>(graph["preprocess"], "name", where + ": preprocess");
    meta.preprocess_formula = json_get<std::string>(graph["preprocess"], "formula", where + ": preprocess");
  }
  if (meta.num_nodes < meta.num_parts)
    throw UserError(path + ": num_nodes " + std::to_string(meta.num_nodes) + " < num_parts");

  meta.vertex_order = "gid";  // partitions made before --vertex-order
  if (root.contains("options") && root["options"].is_object() && root["options"].contains("vertex_order"))
    meta.vertex_order = json_get<std::string>(root["options"], "vertex_order", path + ": options");
  if (root.contains("link_negatives")) meta.link_negatives = json_get<int64_t>(root, "link_negatives", path);

  if (!root.contains("parts") || !root["parts"].is_array()) throw UserError(path + ": key \"parts\" missing");
  const json& parts = root["parts"];
  if (static_cast<int64_t>(parts.size()) != meta.num_parts)
    throw UserError(path + ": parts has " + std::to_string(parts.size()) + " entries, expected num_parts");
  for (const json& part : parts) {
    meta.part_owned.push_back(json_get<int64_t>(part, "owned", path + ": parts"));
    meta.part_halo.push_back(json_get<int64_t>(part, "halo", path + ": parts"));
  }
  return meta;
}

void write_assignment(const std::string& path, const std::vector<int32_t>& part_of, int32_t num_parts) {
  write_atomically(path, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    file.write("/part", part_of, /*compress=*/true);
    write_format(file, "halogen.assignment", kPartitionVersion);
    file.set_attr("num_parts", int64_t{num_parts});
    file.close();
  });
}

std::vector<int32_t> read_assignment(const std::string& path, int32_t num_parts, int64_t num_nodes) {
  h5::File file(path, h5::Mode::read);
  check_partition_file_version(file, "assignment file");
  std::vector<int64_t> dims;
  std::vector<int32_t> part_of = file.read<int32_t>("/part", &dims);
  require(dims.size() == 1 && dims[0] == num_nodes, path, "/part",
          "expected int32 [" + std::to_string(num_nodes) + "]");
  for (size_t v = 0; v < part_of.size(); ++v)  // the message is built only on failure
    if (!(part_of[v] >= 0 && part_of[v] < num_parts))
      require(false, path, "/part",
            "value " + std::to_string(part_of[v]) + " at index " + std::to_string(v) + " outside [0," +
                std::to_string(num_parts) + ")");
  return part_of;
}

void write_shard(const std::string& path, const graph::Shard& shard) {
  write_atomically(path, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    write_format(file, "halogen.part", kPartitionVersion);
    file.set_attr("part", int64_t{shard.part});
    file.set_attr("num_parts", int64_t{shard.num_parts});
    file.set_attr("num_nodes", shard.global_num_nodes);
    file.set_attr("num_edges", shard.global_num_edges);
    file.set_attr("num_classes", int64_t{shard.num_classes});
    file.set_attr("num_features", shard.num_features);
    file.set_attr("name", shard.graph_name);
    file.set_attr("target_steps", shard.target_steps);
    // Stored uncompressed: deflate costs more time at partitioning than it saves in file size, and ranks load
    // their shard faster.
    file.write("/owned/gid", shard.owned_gid);
    file.write("/halo/gid", shard.halo_gid);
    file.write("/halo/recv_offsets", shard.plan.recv_offsets);
    file.write("/send/idx", shard.plan.send_idx);
    file.write("/send/offsets", shard.plan.send_offsets);
    file.write("/csr/indptr", shard.indptr);
    file.write("/csr/indices", shard.indices);
    if (!shard.weight.empty()) file.write("/csr/weight", shard.weight);
    file.write("/degree/owned", shard.degree_owned);
    file.write("/degree/halo", shard.degree_halo);
    file.write("/node/feat", shard.features.data(), {shard.num_owned(), shard.num_features});
    if (!shard.labels.empty()) file.write("/node/label", shard.labels);
    if (!shard.targets.empty()) {
      if (shard.target_steps > 1)
        file.write("/node/target", shard.targets.data(), {shard.target_steps, shard.num_owned()});
      else
        file.write("/node/target", shard.targets);
    }
    if (!shard.target_scale.empty()) {
      file.write("/node/label_offset", shard.target_offset);
      file.write("/node/label_scale", shard.target_scale);
    }
    file.write("/split/train", shard.train);
    file.write("/split/valid", shard.valid);
    file.write("/split/test", shard.test);
    write_shard_snapshots(file, shard);
    write_shard_link_steps(file, shard);
    file.close();
  });
}

graph::Shard read_shard(const std::string& dir, int part) {
  const PartitionMeta meta = read_partition_meta(dir);
  if (part < 0 || part >= meta.num_parts)
    throw UserError(dir + ": part " + std::to_string(part) + " requested, but the directory has " +
                    std::to_string(meta.num_parts) + " parts");
  return read_shard_file(shard_path(dir, part), part, meta);
}

graph::Shard read_shard_file(const std::string& path, int part, const PartitionMeta& meta) {
  h5::File file(path, h5::Mode::read);
  const std::string format = read_format(file);
  require(format == "halogen.part", path, "/",
          "format attribute is \"" + format + "\", expected \"halogen.part\"");
  check_partition_file_version(file, "shard");
  graph::Shard s;
  s.part = static_cast<int32_t>(file.attr_int("part"));
  s.num_parts = static_cast<int32_t>(file.attr_int("num_parts"));
  s.global_num_nodes = file.attr_int("num_nodes");
  s.global_num_edges = file.attr_int("num_edges");
  s.num_classes = static_cast<int32_t>(file.attr_int("num_classes"));
  s.num_features = file.attr_int("num_features");
  s.graph_name = file.attr_string("name");
  s.directed = meta.directed;
  s.target_steps = file.attr_int("target_steps");
  require(s.part == part, path, "/",
          "attribute part is " + std::to_string(s.part) + ", expected " + std::to_string(part));
  require(s.num_parts == meta.num_parts, path, "/",
          "attribute num_parts is " + std::to_string(s.num_parts) + ", meta.json says " +
              std::to_string(meta.num_parts));
  require(s.global_num_nodes == meta.num_nodes, path, "/", "attribute num_nodes disagrees with meta.json");
  require(s.num_features == meta.num_features, path, "/", "attribute num_features disagrees with meta.json");
  const int64_t n = s.global_num_nodes, parts = s.num_parts;

  s.owned_gid = file.read<int64_t>("/owned/gid");
  const int64_t n_own = s.num_owned();
  check_distinct_in(s.owned_gid, 0, n, path, "/owned/gid");
  if (part < static_cast<int>(meta.part_owned.size()))
    require(n_own == meta.part_owned[part], path, "/owned/gid", "length disagrees with meta.json");

  s.halo_gid = file.read<int64_t>("/halo/gid");
  s.plan.recv_offsets = file.read<int64_t>("/halo/recv_offsets");
  const int64_t n_halo = s.num_halo();
  check_offsets(s.plan.recv_offsets, parts, n_halo, path, "/halo/recv_offsets");
  require(s.plan.recv_offsets[part] == s.plan.recv_offsets[part + 1], path, "/halo/recv_offsets",
          "rows received from self");
  for (int64_t q = 0; q < parts; ++q)
    check_ascending_in(s.halo_gid, s.plan.recv_offsets[q], s.plan.recv_offsets[q + 1], 0, n, path, "/halo/gid");
  require(n_own + n_halo <= std::numeric_limits<int32_t>::max(), path, "/halo/gid",
          "owned + halo rows exceed int32 local ids");

  s.plan.send_idx = file.read<int32_t>("/send/idx");
  s.plan.send_offsets = file.read<int64_t>("/send/offsets");
  check_offsets(s.plan.send_offsets, parts, static_cast<int64_t>(s.plan.send_idx.size()), path, "/send/offsets");
  require(s.plan.send_offsets[part] == s.plan.send_offsets[part + 1], path, "/send/offsets", "rows sent to self");
  for (size_t i = 0; i < s.plan.send_idx.size(); ++i)  // messages are built only on failure (per element)
    if (!(s.plan.send_idx[i] >= 0 && s.plan.send_idx[i] < n_own))
      require(false, path, "/send/idx",
            "local id " + std::to_string(s.plan.send_idx[i]) + " at index " + std::to_string(i) +
                " is not an owned row");
  // Each destination's rows in its halo order: ascending gid (owned local ids ascend too only in gid order:
  // partition/vertex_order.h).
  for (int64_t q = 0; q < parts; ++q)
    for (int64_t i = s.plan.send_offsets[q] + 1; i < s.plan.send_offsets[q + 1]; ++i)
      if (!(s.owned_gid[s.plan.send_idx[i]] > s.owned_gid[s.plan.send_idx[i - 1]]))
        require(false, path, "/send/idx",
                "rows for part " + std::to_string(q) + " not in ascending global id at index " +
                    std::to_string(i));

  s.indptr = file.read<int64_t>("/csr/indptr");
  s.indices = file.read<int32_t>("/csr/indices");
  require(static_cast<int64_t>(s.indptr.size()) == n_own + 1, path, "/csr/indptr",
          "expected " + std::to_string(n_own + 1) + " entries, found " + std::to_string(s.indptr.size()));
  check_offsets(s.indptr, n_own, s.nnz(), path, "/csr/indptr");
  for (int64_t r = 0; r < n_own; ++r)
    check_ascending_in(s.indices, s.indptr[r], s.indptr[r + 1], 0, n_own + n_halo, path, "/csr/indices");
  if (file.exists("/csr/weight")) {
    s.weight = file.read<float>("/csr/weight");
    require(static_cast<int64_t>(s.weight.size()) == s.nnz(), path, "/csr/weight",
            "length differs from /csr/indices");
  }

  s.degree_owned = file.read<int64_t>("/degree/owned");
  s.degree_halo = file.read<int64_t>("/degree/halo");
  require(static_cast<int64_t>(s.degree_owned.size()) == n_own, path, "/degree/owned",
          "length differs from /owned/gid");
  require(static_cast<int64_t>(s.degree_halo.size()) == n_halo, path, "/degree/halo",
          "length differs from /halo/gid");
  // A row of the CSR is the vertex's global adjacency row: its degree, plus one if it has a self-loop. (Halo
  // degrees are checked against their owners' by train/load.h.)
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t row = s.indptr[i + 1] - s.indptr[i];
    if (!(s.degree_owned[i] == row || s.degree_owned[i] == row - 1))
      require(false, path, "/degree/owned",
            "degree " + std::to_string(s.degree_owned[i]) + " at index " + std::to_string(i) + " but /csr row " +
                std::to_string(i) + " has " + std::to_string(row) + " entries");
  }
  for (int64_t i = 0; i < n_halo; ++i)
    if (!(s.degree_halo[i] >= 0 && s.degree_halo[i] < n))
      require(false, path, "/degree/halo",
            "degree " + std::to_string(s.degree_halo[i]) + " at index " + std::to_string(i) + " is not in [0, " +
                std::to_string(n) + ")");

  std::vector<int64_t> dims;
  s.features = file.read<float>("/node/feat", &dims);
  require(dims.size() == 2 && dims[0] == n_own && dims[1] == s.num_features, path, "/node/feat",
          "expected float32 [" + std::to_string(n_own) + "," + std::to_string(s.num_features) + "]");
  for (size_t i = 0; i < s.features.size(); ++i)
    if (!std::isfinite(s.features[i]))
      require(false, path, "/node/feat",
            "not finite at row " + std::to_string(i / std::max<int64_t>(s.num_features, 1)) + ", column " +
                std::to_string(i % std::max<int64_t>(s.num_features, 1)));
  if (file.exists("/node/label")) {
    s.labels = file.read<int32_t>("/node/label");
    require(static_cast<int64_t>(s.labels.size()) == n_own, path, "/node/label",
            "length differs from /owned/gid");
    for (size_t i = 0; i < s.labels.size(); ++i)
      if (!(s.labels[i] >= -1 && s.labels[i] < std::max(s.num_classes, 0)))
        require(false, path, "/node/label",
              "label " + std::to_string(s.labels[i]) + " at index " + std::to_string(i) + " outside [-1," +
                  std::to_string(s.num_classes) + ")");
  }
  if (file.exists("/node/target")) {
    s.targets = file.read<float>("/node/target", &dims);
    const int64_t steps = dims.size() == 2 ? dims[0] : 1;
    require(dims.back() == n_own && steps == std::max<int64_t>(s.target_steps, 1), path, "/node/target",
            "expected [target_steps, n_own] or [n_own]");
    s.target_preprocess = meta.preprocess;
  }
  read_target_record(file, path, s);
  const char* const* splits = kSplitPaths;
  std::vector<int64_t>* const outs[3] = {&s.train, &s.valid, &s.test};
  for (int i = 0; i < 3; ++i) {
    if (!file.exists(splits[i])) continue;
    s.splits_present |= static_cast<uint8_t>(1u << i);
    *outs[i] = file.read<int64_t>(splits[i]);
    check_ascending_in(*outs[i], 0, static_cast<int64_t>(outs[i]->size()), 0, n_own, path, splits[i]);
  }
  const std::vector<int64_t>* const read_splits[3] = {&s.train, &s.valid, &s.test};
  if (const SplitOverlap o = first_split_overlap(read_splits, n_own); o.split >= 0) {
    require(false, path, splits[o.split],
            "local id " + std::to_string(o.id) + " at index " + std::to_string(o.index) + " is also in " +
                splits[o.earlier]);
  }
  read_shard_snapshots(file, path, s);
  read_shard_link_steps(file, path, s);
  require(s.link_negatives == meta.link_negatives, path, "/",
          "attribute link_negatives is " + std::to_string(s.link_negatives) + ", meta.json says " +
              std::to_string(meta.link_negatives));
  return s;
}

}  // namespace halogen::io
