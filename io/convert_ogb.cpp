#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/declared_sizes.h"
#include "io/ogb_layout.h"
#include "io/text_reader.h"

namespace halogen::io {

namespace fs = std::filesystem;

namespace ogb {

std::string find_raw(const std::string& dir, const std::string& name) {
  std::error_code ec;
  for (const char* suffix : {".csv.gz", ".csv"}) {
    const fs::path p = fs::path(dir) / "raw" / (name + suffix);
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string require_raw(const std::string& dir, const std::string& name) {
  const std::string path = find_raw(dir, name);
  if (path.empty()) throw UserError((fs::path(dir) / "raw" / (name + ".csv.gz")).string() + ": no such file");
  return path;
}

namespace {

// `split_of` holds, per node, 1 + the index of the split that already lists it (0: none), so that a node in
// two splits (train and test, say) is refused with the line that lists it the second time.
std::vector<int64_t> read_id_list(const std::string& path, int64_t num_nodes, std::vector<uint8_t>& split_of,
                                  int split, const char* const* split_names) {
  LineReader reader(path);
  std::vector<int64_t> ids;
  std::vector<std::string_view> tokens;
  std::string_view line;
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    if (tokens.size() == 1 && tokens[0].empty()) continue;  // blank line
    HALOGEN_USER_CHECK(tokens.size() == 1, "%sexpected 1 column (a node id), found %zu",
                       reader.where().c_str(), tokens.size());
    const int64_t id = parse_int64(tokens[0], reader, 0);
    HALOGEN_USER_CHECK(id >= 0 && id < num_nodes, "%snode id %lld out of range [0, %lld)",
                       reader.where().c_str(), static_cast<long long>(id), static_cast<long long>(num_nodes));
    HALOGEN_USER_CHECK(split_of[id] != split + 1, "%snode id %lld appears twice (duplicate split id)",
                       reader.where().c_str(), static_cast<long long>(id));
    HALOGEN_USER_CHECK(split_of[id] == 0,
                       "%snode id %lld is also in the %s split (train, valid and test must be disjoint)",
                       reader.where().c_str(), static_cast<long long>(id), split_names[split_of[id] - 1]);
    split_of[id] = static_cast<uint8_t>(split + 1);
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

std::string find_split_file(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  for (const char* suffix : {".csv.gz", ".csv"}) {
    if (fs::is_regular_file(dir / (name + suffix), ec)) return (dir / (name + suffix)).string();
  }
  throw UserError((dir / (name + ".csv.gz")).string() + ": no such file");
}

// split/<scheme> as read_splits chooses it; "" when there is no split/ directory (warned).
std::string choose_split_dir(const std::string& dir, const std::string& scheme) {
  const fs::path split_dir = fs::path(dir) / "split";
  std::error_code ec;
  std::vector<std::string> schemes;
  if (fs::is_directory(split_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(split_dir)) {
      if (entry.is_directory()) schemes.push_back(entry.path().filename().string());
    }
  }
  std::sort(schemes.begin(), schemes.end());
  std::string chosen = scheme;
  if (chosen.empty()) {
    if (schemes.empty()) {
      log::warn(dir + ": no split/ directory; the graph file gets empty splits");
      return "";
    }
    if (schemes.size() > 1) {
      std::string list;
      for (const auto& s : schemes) list += (list.empty() ? "" : ", ") + s;
      throw UserError(split_dir.string() + ": several split schemes (" + list + "); choose one with --split");
    }
    chosen = schemes[0];
  } else if (std::find(schemes.begin(), schemes.end(), chosen) == schemes.end()) {
    throw UserError((split_dir / chosen).string() + ": no such split scheme");
  }
  return (split_dir / chosen).string();
}

void read_splits(const std::string& dir, const std::string& scheme, graph::Graph* g) {
  const std::string chosen_dir = choose_split_dir(dir, scheme);
  if (chosen_dir.empty()) return;
  static const char* const names[3] = {"train", "valid", "test"};
  std::vector<uint8_t> split_of(static_cast<size_t>(g->num_nodes), 0);
  g->train = read_id_list(find_split_file(chosen_dir, "train"), g->num_nodes, split_of, 0, names);
  g->valid = read_id_list(find_split_file(chosen_dir, "valid"), g->num_nodes, split_of, 1, names);
  g->test = read_id_list(find_split_file(chosen_dir, "test"), g->num_nodes, split_of, 2, names);
}

int32_t label_from_value(double value, const std::string& where) {
  if (std::isnan(value)) return -1;
  HALOGEN_USER_CHECK(value >= 0 && value < 2147483647.0 && value == std::floor(value),
                     "%slabel %g out of range (labels are integers >= 0; NaN or empty = unlabeled)",
                     where.c_str(), value);
  return static_cast<int32_t>(value);
}

int32_t label_from_text(std::string_view token, const LineReader& reader) {
  while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
  if (token.empty() || token == "nan" || token == "NaN" || token == "NAN") return -1;
  const double value = parse_double(token, reader, 0);
  if (value >= 0 && value < 2147483647.0 && value == std::floor(value)) return static_cast<int32_t>(value);
  return label_from_value(value, reader.where());  // throws with the message
}

void set_num_classes(graph::Graph* g) {
  int32_t max_label = -1;
  for (int32_t l : g->labels) max_label = std::max(max_label, l);
  g->num_classes = max_label + 1;
}

std::string default_name(const std::string& dir, const std::string& given) {
  if (!given.empty()) return given;
  fs::path p = fs::path(dir);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

int64_t read_single_count(const std::string& path, const char* what) {
  LineReader reader(path);
  std::string_view line;
  int64_t value = -1, lines = 0;
  while (reader.next(&line)) {
    if (line.empty()) continue;
    ++lines;
    HALOGEN_USER_CHECK(lines == 1,
                       "%sseveral graphs in this dataset (graph-property data); only node-property "
                       "datasets with one graph are supported",
                       reader.where().c_str());
    value = parse_int64(line, reader, 0);
    HALOGEN_USER_CHECK(value >= 0, "%s%s %lld is negative", reader.where().c_str(), what,
                       static_cast<long long>(value));
  }
  HALOGEN_USER_CHECK(lines == 1, "%s: empty (expected the %s)", path.c_str(), what);
  return value;
}

int64_t read_edge_count(const std::string& dir) {
  const std::string path = require_raw(dir, "num-edge-list");
  const int64_t edges = read_single_count(path, "number of edges");
  HALOGEN_USER_CHECK(edges > 0, "%s: 0 edges: a graph without edges", path.c_str());
  return edges;
}

}  // namespace ogb

namespace {

using ogb::read_edge_count;
using ogb::read_single_count;

graph::EdgeList read_edges(const std::string& path, int64_t num_nodes, int64_t num_edges) {
  graph::EdgeList edges;
  const auto reserved = static_cast<size_t>(reserve_hint(num_edges, LineReader(path).file_size()));
  edges.src.reserve(reserved);
  edges.dst.reserve(reserved);
  ogb::scan_edges(path, num_nodes, num_edges, [&](int64_t src, int64_t dst) {
    edges.src.push_back(src);
    edges.dst.push_back(dst);
  });
  return edges;
}

void read_features(const std::string& path, graph::Graph* g) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  int64_t rows = 0;
  log::Progress progress("convert: node features", g->num_nodes);
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    if (rows == 0) {
      g->num_features = static_cast<int64_t>(tokens.size());
      g->features.reserve(static_cast<size_t>(
          reserve_hint(saturating_bytes(g->num_nodes, g->num_features), reader.file_size())));
    }
    HALOGEN_USER_CHECK(static_cast<int64_t>(tokens.size()) == g->num_features,
                       "%sexpected %lld columns (as on line 1), found %zu", reader.where().c_str(),
                       static_cast<long long>(g->num_features), tokens.size());
    HALOGEN_USER_CHECK(rows < g->num_nodes, "%smore feature rows than the %lld nodes of num-node-list",
                       reader.where().c_str(), static_cast<long long>(g->num_nodes));
    for (size_t c = 0; c < tokens.size(); ++c) {
      const float value = parse_float(tokens[c], reader, c);
      HALOGEN_USER_CHECK(std::isfinite(value), "%scolumn %zu: feature value is not finite",
                         reader.where().c_str(), c + 1);
      g->features.push_back(value);
    }
    ++rows;
    if ((rows & 0x3FF) == 0) progress.update(rows);
  }
  progress.finish();
  HALOGEN_USER_CHECK(rows == g->num_nodes, "%s: %lld rows, but num-node-list says %lld nodes", path.c_str(),
                     static_cast<long long>(rows), static_cast<long long>(g->num_nodes));
}

void read_labels(const std::string& path, graph::Graph* g) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  g->labels.reserve(static_cast<size_t>(reserve_hint(g->num_nodes, reader.file_size())));
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    HALOGEN_USER_CHECK(tokens.size() == 1,
                       "%sexpected 1 column (a class label), found %zu; multi-task labels "
                       "are not supported",
                       reader.where().c_str(), tokens.size());
    HALOGEN_USER_CHECK(static_cast<int64_t>(g->labels.size()) < g->num_nodes,
                       "%smore labels than the %lld nodes of num-node-list", reader.where().c_str(),
                       static_cast<long long>(g->num_nodes));
    g->labels.push_back(ogb::label_from_text(tokens[0], reader));
  }
  HALOGEN_USER_CHECK(static_cast<int64_t>(g->labels.size()) == g->num_nodes,
                     "%s: %zu labels, but num-node-list says %lld nodes", path.c_str(), g->labels.size(),
                     static_cast<long long>(g->num_nodes));
  ogb::set_num_classes(g);
}

}  // namespace

graph::Graph convert_ogb(const ConvertOptions& options) {
  const std::string& dir = options.input;
  std::error_code ec;
  HALOGEN_USER_CHECK(fs::is_directory(dir, ec),
                     "%s: not a directory (an OGB dataset directory holds raw/ and split/)", dir.c_str());
  if (ogb::find_raw(dir, "edge").empty() && fs::is_regular_file(fs::path(dir) / "raw" / "data.npz", ec)) {
    return convert_ogb_npz(options);  // the binary variant of the same layout
  }
  HALOGEN_USER_CHECK(
      !fs::is_directory(fs::path(dir) / "raw" / "relations", ec),
      "%s: a heterogeneous dataset (raw/relations/, e.g. ogbn-mag); only homogeneous graphs are "
      "supported",
      dir.c_str());
  if (!ogb::find_raw(dir, "edge-feat").empty()) {
    log::warn(dir + ": raw/edge-feat is ignored (edge features are not part of the graph file)");
  }
  graph::Graph g;
  g.name = ogb::default_name(dir, options.name);
  g.directed = options.directed;
  g.num_nodes = read_single_count(ogb::require_raw(dir, "num-node-list"), "number of nodes");
  const int64_t num_edges = read_edge_count(dir);
  graph::EdgeList edges = read_edges(ogb::require_raw(dir, "edge"), g.num_nodes, num_edges);
  // Per-node files are read before anything of num-node-list's size is allocated: their row counts confirm
  // it (a corrupt num-node-list of 2^28 is refused there, after reading what the files hold).
  const std::string feature_path = ogb::find_raw(dir, "node-feat"), label_path = ogb::find_raw(dir, "node-label");
  if (!feature_path.empty()) read_features(feature_path, &g);
  if (!label_path.empty()) read_labels(label_path, &g);
  const std::string node_list = ogb::require_raw(dir, "num-node-list") + ": ";
  if (feature_path.empty() && label_path.empty()) {
    check_declared_graph(node_list, "num-node-list", g.num_nodes, num_edges);
  } else {
    check_memory_fits(csr_build_bytes(g.num_nodes, num_edges),
                      strformat("%sa graph of %lld vertices and %lld edges", node_list.c_str(),
                                static_cast<long long>(g.num_nodes), static_cast<long long>(num_edges)));
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);
  ogb::read_splits(dir, options.split, &g);
  return g;
}

}  // namespace halogen::io
