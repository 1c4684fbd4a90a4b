// Bounded-memory conversion of OGB csv datasets (convert_ogb_to_file; io/convert_chunked.h). Kept apart from
// convert_ogb.cpp, whose readers the fuzz build compiles without HDF5.
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
using ogb::read_single_count;
using ogb::read_edge_count;

namespace {

// read_features/read_labels of the in-memory conversion, streamed: each row goes to the file as it is read.
int64_t stream_features(const std::string& path, int64_t num_nodes, h5::File& file, BufferBudget& budget) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  std::vector<float> row;
  int64_t rows = 0, num_features = 0;
  std::unique_ptr<FeatureStreamWriter> writer;
  log::Progress progress("convert: node features", num_nodes);
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    if (rows == 0) {
      num_features = static_cast<int64_t>(tokens.size());
      writer = std::make_unique<FeatureStreamWriter>(file, num_nodes, num_features, budget);
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
    writer->append(row.data(), 1);
    ++rows;
    if ((rows & 0x3FF) == 0) progress.update(rows);
  }
  progress.finish();
  HALOGEN_USER_CHECK(rows == num_nodes, "%s: %lld rows, but num-node-list says %lld nodes", path.c_str(),
                     static_cast<long long>(rows), static_cast<long long>(num_nodes));
  if (writer && num_features > 0) writer->finish();
  return num_features;
}

int32_t stream_labels(const std::string& path, int64_t num_nodes, h5::File& file, BufferBudget& budget) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  h5::DatasetWriter<int32_t> writer(file, "/node/label", {num_nodes});
  const HeldBytes held(budget, writer.buffer_bytes());
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
    writer.append(&label, 1);
    ++count;
  }
  HALOGEN_USER_CHECK(count == num_nodes, "%s: %lld labels, but num-node-list says %lld nodes", path.c_str(),
                     static_cast<long long>(count), static_cast<long long>(num_nodes));
  writer.finish();
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

void write_splits_chunked(const std::string& dir, const std::string& scheme, int64_t num_nodes,
                          h5::File& file, BufferBudget& budget, ConvertSummary* summary) {
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

void write_csr_chunked(EntrySorter& sorter, h5::File& file, const std::string& output, int64_t num_nodes,
                       BufferBudget& budget, ConvertSummary* summary) {
  summary->runs = sorter.runs_spilled();
  CsrStreamWriter csr(file, output, num_nodes, budget);
  {
    log::Progress progress("convert: merge edges (stored entries)", 0);
    int64_t entries = 0;
    sorter.merge([&](int64_t row, int64_t col) {
      csr.add(row, col);
      if ((++entries & 0xFFFF) == 0) progress.update(entries);
    });
    progress.finish();
  }
  summary->num_edges = csr.finish();
  file.set_attr("num_edges", summary->num_edges);
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
  check_convert_limit(options.memory_limit_bytes);
  BufferBudget budget(options.memory_limit_bytes);
  ConvertSummary summary;
  summary.directed = options.directed;
  const int64_t num_nodes = read_single_count(ogb::require_raw(dir, "num-node-list"), "number of nodes");
  const int64_t num_edges = read_edge_count(dir);
  summary.num_nodes = num_nodes;
  write_atomically(output, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    write_graph_attributes(file, ogb::default_name(dir, options.name), num_nodes, 0, options.directed, 0, 0);
    // Room for the per-node writers (2 MiB) beside the edge buffer.
    EntrySorter sorter(output, budget, budget.limit_bytes() - (int64_t{2} << 20), !options.directed);
    {
      ogb::scan_edges(ogb::require_raw(dir, "edge"), num_nodes, num_edges,
                      [&](int64_t src, int64_t dst) { sorter.add_edge(src, dst); });
    }
    sorter.finish_input();
    fault_point("convert-runs");  // tests: killed with the sorted runs on disk
    // Per-node files confirm num-node-list before anything of its size is written (as in convert_ogb).
    const std::string feature_path = ogb::find_raw(dir, "node-feat"),
                      label_path = ogb::find_raw(dir, "node-label");
    if (!feature_path.empty()) summary.num_features = stream_features(feature_path, num_nodes, file, budget);
    if (!label_path.empty()) summary.num_classes = stream_labels(label_path, num_nodes, file, budget);
    if (feature_path.empty() && label_path.empty()) {
      const int64_t endpoints = saturating_bytes(num_edges, 2);
      HALOGEN_USER_CHECK(num_nodes - std::min(num_nodes, endpoints) <= kMaxIsolatedVertices,
                         "%s: num-node-list declares %lld vertices, but its %lld edges touch at most %lld of "
                         "them; more than %lld isolated vertices are taken for a corrupt size",
                         ogb::require_raw(dir, "num-node-list").c_str(), static_cast<long long>(num_nodes),
                         static_cast<long long>(num_edges), static_cast<long long>(endpoints),
                         static_cast<long long>(kMaxIsolatedVertices));
    }
    ogb::write_csr_chunked(sorter, file, output, num_nodes, budget, &summary);
    file.set_attr("num_classes", static_cast<int64_t>(summary.num_classes));
    file.set_attr("num_features", summary.num_features);
    ogb::write_splits_chunked(dir, options.split, num_nodes, file, budget, &summary);
    file.close();
  });
  summary.buffer_high_water_bytes = budget.high_water_bytes();
  return summary;
}

}  // namespace halogen::io
