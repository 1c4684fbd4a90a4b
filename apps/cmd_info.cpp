// `halogen info PATH [--check]`: describe a graph file, or a partition directory (partition/inspect.h).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/info_memory.h"
#include "core/error.h"
#include "io/file_format.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "partition/inspect.h"

namespace halogen::app {

namespace {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? strformat("%.0f B", bytes) : strformat("%.1f %s", bytes, units[unit]);
}

void list_datasets(const h5::File& file, const std::string& group, std::vector<std::string>* out) {
  for (const std::string& name : file.list(group)) {
    const std::string path = (group == "/" ? "" : group) + "/" + name;
    if (file.is_group(path))
      list_datasets(file, path, out);
    else
      out->push_back(path);
  }
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Whether the graph has edge weights (/csr/weight, used by `halogen train --edge-weight`) and their range,
// read in blocks so memory stays small for any edge count.
void describe_edge_weights(const h5::File& file) {
  if (!file.exists("/csr/weight")) {
    std::printf("weights   none (unweighted: train --edge-weight needs /csr/weight)\n");
    return;
  }
  const int64_t count = file.shape("/csr/weight").at(0);
  constexpr int64_t kBlock = int64_t{4} << 20;
  double min = 0, max = 0, sum = 0;
  int64_t negative = 0;
  bool first = true;
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const std::vector<float> values =
        file.read_rows<float>("/csr/weight", begin, std::min(count, begin + kBlock));
    for (float w : values) {
      if (first) min = max = w;
      first = false;
      min = std::min<double>(min, w);
      max = std::max<double>(max, w);
      sum += w;
      negative += w < 0.0f;
    }
  }
  std::printf("weights   yes (/csr/weight): min %g  mean %g  max %g%s\n", min, count > 0 ? sum / count : 0.0,
              max,
              negative > 0 ? strformat(", %lld negative (train --edge-weight needs weights >= 0)",
                                       static_cast<long long>(negative))
                                 .c_str()
                           : "");
}

// Verifies the checksum of every dataset first (reads the whole file once, at disk speed, in bounded memory),
// so a corrupt file is refused before anything is printed; then describes it from attributes, shapes, indptr
// and labels.
void describe_graph_file(const std::string& path, bool check) {
  const h5::File file(path, h5::Mode::read);
  io::check_graph_format(file);
  std::vector<std::string> datasets;
  list_datasets(file, "/", &datasets);
  int64_t verified_bytes = 0;
  for (const std::string& d : datasets) verified_bytes += file.verify_checksum(d);
  if (check) {
    const graph::Graph g = io::read_graph(path);  // throws on the first violation
    std::printf("check: ok (every invariant of the graph file holds)\n");
  }
  const int64_t num_nodes = file.attr_int("num_nodes");
  const int64_t num_edges = file.attr_int("num_edges");
  const bool directed = file.attr_int("directed") != 0;
  std::printf("file      %s\n", path.c_str());
  std::printf("name      %s\n", file.has_attr("name") ? file.attr_string("name").c_str() : "");
  std::printf("format    %s version %lld\n", io::read_format(file).c_str(),
              static_cast<long long>(io::read_format_version(file)));
  std::printf("nodes     %lld\n", static_cast<long long>(num_nodes));
  std::printf("edges     %lld stored (%s)\n", static_cast<long long>(num_edges),
              directed ? "directed"
                       : strformat("undirected: %lld pairs, each stored both ways",
                                   static_cast<long long>(num_edges / 2))
                             .c_str());
  const int64_t features = file.exists("/node/feat") ? file.shape("/node/feat").back() : 0;
  std::printf("features  %lld\n", static_cast<long long>(features));

  std::vector<int64_t> dims;
  const std::vector<int64_t> indptr = file.read<int64_t>("/csr/indptr", &dims);
  HALOGEN_USER_CHECK(static_cast<int64_t>(indptr.size()) == num_nodes + 1,
                     "%s: /csr/indptr: expected %lld entries, found %zu", path.c_str(),
                     static_cast<long long>(num_nodes + 1), indptr.size());
  int64_t min_degree = num_nodes > 0 ? indptr[1] - indptr[0] : 0, max_degree = 0, isolated = 0;
  for (int64_t v = 0; v < num_nodes; ++v) {
    const int64_t d = indptr[v + 1] - indptr[v];
    min_degree = std::min(min_degree, d);
    max_degree = std::max(max_degree, d);
    isolated += d == 0;
  }
  std::printf("degree    min %lld  mean %.2f  max %lld  isolated %lld\n", static_cast<long long>(min_degree),
              num_nodes > 0 ? static_cast<double>(num_edges) / num_nodes : 0.0,
              static_cast<long long>(max_degree), static_cast<long long>(isolated));

  describe_edge_weights(file);

  const int64_t num_classes = file.attr_int("num_classes");
  if (file.exists("/node/label") && !file.is_floating("/node/label")) {
    const std::vector<int32_t> labels = file.read<int32_t>("/node/label");
    const int64_t labeled = std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
    std::printf("classes   %lld (%lld labeled nodes, %lld unlabeled)\n", static_cast<long long>(num_classes),
                static_cast<long long>(labeled), static_cast<long long>(num_nodes - labeled));
  } else if (file.exists("/node/label")) {
    std::printf("targets   regression %s\n", shape_text(file.shape("/node/label")).c_str());
    if (file.has_attr("preprocess", "/node/label")) {  // convert --preprocess (io/temporal.h)
      const std::string formula = file.has_attr("preprocess_formula", "/node/label")
                                      ? file.attr_string("preprocess_formula", "/node/label")
                                      : std::string();
      std::printf("preprocess: %s%s%s%s\n", file.attr_string("preprocess", "/node/label").c_str(),
                  formula.empty() ? "" : "  (", formula.c_str(), formula.empty() ? "" : ")");
    }
  } else {
    std::printf("classes   %lld (no labels)\n", static_cast<long long>(num_classes));
  }
  auto split_size = [&](const char* name) {
    const std::string dataset = std::string("/split/") + name;
    return file.exists(dataset) ? file.shape(dataset).at(0) : int64_t{0};
  };
  std::printf("split     train %lld  valid %lld  test %lld\n", static_cast<long long>(split_size("train")),
              static_cast<long long>(split_size("valid")), static_cast<long long>(split_size("test")));
  if (file.exists("/snapshots")) {
    const std::vector<std::string> steps = file.list("/snapshots");
    int64_t min_edges = -1, max_edges = 0, sum_edges = 0;
    for (const std::string& step : steps) {
      const std::string indices = "/snapshots/" + step + "/indices";
      const int64_t edges = file.exists(indices) ? file.shape(indices).at(0) : 0;
      min_edges = min_edges < 0 ? edges : std::min(min_edges, edges);
      max_edges = std::max(max_edges, edges);
      sum_edges += edges;
    }
    std::printf("snapshots %zu  stored edges per snapshot min %lld  mean %.1f  max %lld\n", steps.size(),
                static_cast<long long>(std::max<int64_t>(min_edges, 0)),
                steps.empty() ? 0.0 : static_cast<double>(sum_edges) / static_cast<double>(steps.size()),
                static_cast<long long>(max_edges));
  }

  std::printf("datasets\n");
  int64_t total = 0;
  for (const std::string& d : datasets) {
    const int64_t bytes = file.storage_bytes(d);
    total += bytes;
    std::printf("  %-20s %-8s %-18s %12lld bytes (%s)\n", d.c_str(), file.element_type(d).c_str(),
                shape_text(file.shape(d)).c_str(), static_cast<long long>(bytes),
                human_bytes(static_cast<double>(bytes)).c_str());
  }
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  std::printf("total     %s in datasets, %s on disk\n", human_bytes(static_cast<double>(total)).c_str(),
              ec ? "?" : human_bytes(static_cast<double>(file_size)).c_str());
  std::printf("integrity Fletcher-32 checksums ok (every chunk of the %zu datasets, %s of data)\n",
              datasets.size(), human_bytes(static_cast<double>(verified_bytes)).c_str());
}

}  // namespace

void add_info_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Describe a graph file or partition directory");
  static std::string path;
  static bool check = false;
  cmd->add_option("path", path, "Graph file (.h5) or partition directory")->required();
  cmd->add_flag("--check", check, "Also verify every invariant (reads the whole file or directory)");
  // The model a partition directory will be trained with, for the per-rank memory prediction: the options and
  // defaults of `halogen train` (apps/model_options.h).
  static ModelFlags model;
  add_model_options(cmd, model);
  static std::string device = "cpu";
  cmd->add_option("--device", device,
                  "Directory: the device train will run on (cuda: every matrix keeps its edge values, which the CPU "
                  "computes from the degrees)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->callback([] {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      partition::describe_partition_dir(path, check);
      require_static_model(model, "info");
      print_training_memory(path, model_config(model), device == "cuda" ? Device::cuda : Device::cpu);
      return;
    }
    describe_graph_file(path, check);
  });
}

}  // namespace halogen::app
