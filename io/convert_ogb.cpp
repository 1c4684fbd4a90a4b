// OGB node-property datasets in csv (raw/*.csv.gz): the layout's helpers (shared with the npz variant,
// io/ogb_layout.h) and convert_ogb_to_file, the conversion pipeline of io/convert_chunked.h. The edge file is
// sorted into /csr; features and labels, read after the edges, are held (RowStash) until /csr is written, so
// the datasets come in write_graph's order and the file is the one write_graph would write.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "io/atomic_file.h"
#include "io/convert.h"
#include "io/convert_chunked.h"
#include "io/declared_sizes.h"
#include "io/graph_file.h"
#include "io/h5.h"
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

// raw/node-feat: rows checked (columns as on line 1, finite values, no more rows than num-node-list) into a
// stash; returns the column count.
int64_t read_features(const std::string& path, int64_t num_nodes, std::unique_ptr<RowStash<float>>* stash,
                      const std::string& output, BufferBudget& budget) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  std::vector<float> row;
  int64_t rows = 0, num_features = 0;
  log::Progress progress("convert: node features", num_nodes);
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    if (rows == 0) {
      num_features = static_cast<int64_t>(tokens.size());
      *stash = std::make_unique<RowStash<float>>(
          output, budget, num_features, "node features",
          reserve_hint(saturating_bytes(num_nodes, num_features), reader.file_size()) / num_features);
    }
    HALOGEN_USER_CHECK(static_cast<int64_t>(tokens.size()) == num_features,
                       "%sexpected %lld columns (as on line 1), found %zu", reader.where().c_str(),
                       static_cast<long long>(num_features), tokens.size());
    HALOGEN_USER_CHECK(rows < num_nodes, "%smore feature rows than the %lld nodes of num-node-list",
                       reader.where().c_str(), static_cast<long long>(num_nodes));
    row.resize(tokens.size());
    for (size_t c = 0; c < tokens.size(); ++c) {
      row[c] = parse_float(tokens[c], reader, c);
      HALOGEN_USER_CHECK(std::isfinite(row[c]), "%scolumn %zu: feature value is not finite",
                         reader.where().c_str(), c + 1);
    }
    (*stash)->append(row.data());
    ++rows;
    if ((rows & 0x3FF) == 0) progress.update(rows);
  }
  progress.finish();
  HALOGEN_USER_CHECK(rows == num_nodes, "%s: %lld rows, but num-node-list says %lld nodes", path.c_str(),
                     static_cast<long long>(rows), static_cast<long long>(num_nodes));
  return num_features;
}

// raw/node-label: one label a line (NaN or empty = -1) into a stash; returns the class count (max + 1).
int32_t read_labels(const std::string& path, int64_t num_nodes, RowStash<int32_t>& stash) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  int64_t count = 0;
  int32_t max_label = -1;
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    HALOGEN_USER_CHECK(tokens.size() == 1,
                       "%sexpected 1 column (a class label), found %zu; multi-task labels "
                       "are not supported",
                       reader.where().c_str(), tokens.size());
    HALOGEN_USER_CHECK(count < num_nodes, "%smore labels than the %lld nodes of num-node-list",
                       reader.where().c_str(), static_cast<long long>(num_nodes));
    const int32_t label = ogb::label_from_text(tokens[0], reader);
    max_label = std::max(max_label, label);
    stash.append(&label);
    ++count;
  }
  HALOGEN_USER_CHECK(count == num_nodes, "%s: %lld labels, but num-node-list says %lld nodes", path.c_str(),
                     static_cast<long long>(count), static_cast<long long>(num_nodes));
  return max_label + 1;
}

}  // namespace

namespace ogb {

namespace {

// The first error of the split files in reading order: (split, line), and its message.
struct SplitError {
  int split = 3;  // 3: none
  int64_t line = 0;
  std::string message;
  bool before(int split_index, int64_t line_number) const {
    return split < split_index || (split == split_index && line <= line_number);
  }
};

}  // namespace

void write_splits(const std::string& dir, const std::string& scheme, int64_t num_nodes, h5::File& file,
                  BufferBudget& budget, ConvertSummary* summary) {
  file.set_attr("num_classes", static_cast<int64_t>(summary->num_classes));
  file.set_attr("num_features", summary->num_features);
  static const char* const names[3] = {"train", "valid", "test"};
  const std::string chosen_dir = choose_split_dir(dir, scheme);
  int64_t counts[3] = {0, 0, 0};
  std::string paths[3];
  if (!chosen_dir.empty()) {
    for (int s = 0; s < 3; ++s) paths[s] = find_split_file(chosen_dir, names[s]);
    // read_id_list's checks in windows of vertex ids: split_of for ids [low, low + window) only, one pass
    // over the three files per window. Each pass stops at the earliest error found so far; the earliest error
    // of all passes is the one read_id_list (one table for every vertex) reports, and it is thrown at the
    // end.
    int64_t window =
        std::max<int64_t>(int64_t{64} << 10, std::min(num_nodes, budget.free_bytes() - (int64_t{1} << 20)));
    // Test-only: HALOGEN_TEST_SPLIT_WINDOW=V checks in windows of V vertices (many passes on a small graph).
    if (const char* test_window = std::getenv("HALOGEN_TEST_SPLIT_WINDOW"))
      window = std::max(1, std::atoi(test_window));
    std::vector<uint8_t> split_of(static_cast<size_t>(std::min(window, std::max<int64_t>(num_nodes, 1))));
    const HeldBytes held(budget, static_cast<int64_t>(split_of.size()));
    SplitError first;
    std::vector<std::string_view> tokens;
    std::string_view line;
    for (int64_t low = 0; low == 0 || low < num_nodes; low += window) {
      std::fill(split_of.begin(), split_of.end(), 0);
      for (int s = 0; s < 3 && first.split >= s; ++s) {
        LineReader reader(paths[s]);
        int64_t count = 0;
        while (reader.next(&line)) {
          if (first.before(s, reader.line_number())) break;
          try {
            split_tokens(line, ',', &tokens);
            if (tokens.size() == 1 && tokens[0].empty()) continue;  // blank line
            HALOGEN_USER_CHECK(tokens.size() == 1, "%sexpected 1 column (a node id), found %zu",
                               reader.where().c_str(), tokens.size());
            const int64_t id = parse_int64(tokens[0], reader, 0);
            HALOGEN_USER_CHECK(id >= 0 && id < num_nodes, "%snode id %lld out of range [0, %lld)",
                               reader.where().c_str(), static_cast<long long>(id),
                               static_cast<long long>(num_nodes));
            ++count;
            if (id < low || id >= low + window) continue;
            uint8_t& member = split_of[static_cast<size_t>(id - low)];
            HALOGEN_USER_CHECK(member != s + 1, "%snode id %lld appears twice (duplicate split id)",
                               reader.where().c_str(), static_cast<long long>(id));
            HALOGEN_USER_CHECK(
                member == 0,
                "%snode id %lld is also in the %s split (train, valid and test must be disjoint)",
                reader.where().c_str(), static_cast<long long>(id), names[member - 1]);
            member = static_cast<uint8_t>(s + 1);
          } catch (const UserError& e) {
            first = {s, reader.line_number(), e.what()};
            break;
          }
        }
        counts[s] = count;
      }
      if (num_nodes == 0) break;
    }
    if (first.split < 3) throw UserError(first.message);
  }
  // The ids, checked, written in chunks.
  for (int s = 0; s < 3; ++s) {
    h5::DatasetWriter<int64_t> writer(file, std::string("/split/") + names[s], {counts[s]});
    const HeldBytes held(budget, writer.buffer_bytes());
    if (counts[s] > 0) {
      LineReader reader(paths[s]);
      std::vector<std::string_view> tokens;
      std::string_view line;
      while (reader.next(&line)) {
        split_tokens(line, ',', &tokens);
        if (tokens.size() == 1 && tokens[0].empty()) continue;
        const int64_t id = parse_int64(tokens[0], reader, 0);
        writer.append(&id, 1);
      }
    }
    writer.finish();
  }
  summary->train = counts[0];
  summary->valid = counts[1];
  summary->test = counts[2];
}

}  // namespace ogb

ConvertSummary convert_ogb_to_file(const ConvertOptions& options, const std::string& output) {
  const std::string& dir = options.input;
  std::error_code ec;
  HALOGEN_USER_CHECK(fs::is_directory(dir, ec),
                     "%s: not a directory (an OGB dataset directory holds raw/ and split/)", dir.c_str());
  if (ogb::find_raw(dir, "edge").empty() && fs::is_regular_file(fs::path(dir) / "raw" / "data.npz", ec)) {
    return convert_ogb_npz_to_file(options, output);  // the binary variant of the same layout
  }
  HALOGEN_USER_CHECK(
      !fs::is_directory(fs::path(dir) / "raw" / "relations", ec),
      "%s: a heterogeneous dataset (raw/relations/, e.g. ogbn-mag); only homogeneous graphs are "
      "supported",
      dir.c_str());
  if (!ogb::find_raw(dir, "edge-feat").empty()) {
    log::warn(dir + ": raw/edge-feat is ignored (edge features are not part of the graph file)");
  }
  BufferBudget budget(convert_limit_bytes(options.memory_limit_bytes));
  ConvertSummary summary;
  summary.directed = options.directed;
  summary.limit_bytes = budget.limit_bytes();
  const int64_t num_nodes = ogb::read_single_count(ogb::require_raw(dir, "num-node-list"), "number of nodes");
  const int64_t num_edges = ogb::read_edge_count(dir);
  summary.num_nodes = num_nodes;
  write_atomically(output, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    write_graph_attributes(file, ogb::default_name(dir, options.name), num_nodes, 0, options.directed, 0, 0);
    // Room for the per-node writers (2 MiB) beside the edge buffer.
    EntrySorter sorter(output, budget, budget.limit_bytes() - (int64_t{2} << 20), !options.directed);
    ogb::scan_edges(ogb::require_raw(dir, "edge"), num_nodes, num_edges,
                    [&](int64_t src, int64_t dst) { sorter.add_edge(src, dst); });
    sorter.finish_input();
    fault_point("convert-runs");  // tests: killed with the sorted runs on disk
    // Per-node files confirm num-node-list before anything of its size is written: they are read (into
    // stashes) before /csr, and written after it, as write_graph orders the datasets.
    const std::string feature_path = ogb::find_raw(dir, "node-feat"),
                      label_path = ogb::find_raw(dir, "node-label");
    std::unique_ptr<RowStash<float>> features;
    std::unique_ptr<RowStash<int32_t>> labels;
    if (!feature_path.empty())
      summary.num_features = read_features(feature_path, num_nodes, &features, output, budget);
    if (!label_path.empty()) {
      labels = std::make_unique<RowStash<int32_t>>(output, budget, 1, "node labels", num_nodes);
      summary.num_classes = read_labels(label_path, num_nodes, *labels);
    }
    if (feature_path.empty() && label_path.empty())
      check_isolated_vertices(ogb::require_raw(dir, "num-node-list") + ": ", "num-node-list", num_nodes,
                              num_edges);
    summary.runs = sorter.runs_spilled();
    summary.num_edges = write_sorted_csr(sorter, file, output, num_nodes, budget);
    if (features && summary.num_features > 0) {
      FeatureStreamWriter writer(file, num_nodes, summary.num_features, budget);
      features->replay([&](const float* rows, int64_t count) { writer.append(rows, count); });
      writer.finish();
    }
    features.reset();
    if (labels) {
      h5::DatasetWriter<int32_t> writer(file, "/node/label", {num_nodes});
      const HeldBytes held(budget, writer.buffer_bytes());
      labels->replay([&](const int32_t* rows, int64_t count) { writer.append(rows, count); });
      writer.finish();
      labels.reset();
    }
    ogb::write_splits(dir, options.split, num_nodes, file, budget, &summary);
    file.close();
  });
  summary.buffer_high_water_bytes = budget.high_water_bytes();
  return summary;
}

}  // namespace halogen::io
