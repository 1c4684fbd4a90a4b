#pragma once
// Pieces shared by the two OGB readers (CSV and npz): locating files, the split directory, labels.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "graph/graph.h"
#include "io/npz.h"
#include "io/text_reader.h"

namespace halogen::h5 {
class File;
}

namespace halogen::io {
class BufferBudget;
struct ConvertSummary;
}  // namespace halogen::io

namespace halogen::io::ogb {

// DIR/raw/NAME.csv.gz, or DIR/raw/NAME.csv when only the uncompressed file exists; "" when neither does.
std::string find_raw(const std::string& dir, const std::string& name);
// Like find_raw, but a UserError naming the missing file.
std::string require_raw(const std::string& dir, const std::string& name);

// One label value: NaN or empty = -1; otherwise an integral non-negative number (OGB stores some as 12.0).
int32_t label_from_text(std::string_view token, const LineReader& reader);
int32_t label_from_value(double value, const std::string& where);

// num_classes = max label + 1.
void set_num_classes(graph::Graph* g);

// Reads an OGB edge file (raw/edge.csv(.gz)): lines "src,dst" with both ids in [0, num_nodes), exactly
// num_edges of them (num-edge-list); calls edge(src, dst) for each, in file order. Errors name file and line.
template <typename Edge>
void scan_edges(const std::string& path, int64_t num_nodes, int64_t num_edges, Edge&& edge) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  log::Progress progress("convert: edges", num_edges);
  int64_t count = 0;
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    HALOGEN_USER_CHECK(tokens.size() == 2, "%sexpected 2 columns (src,dst), found %zu", reader.where().c_str(),
                       tokens.size());
    const int64_t src = parse_int64(tokens[0], reader, 0);
    const int64_t dst = parse_int64(tokens[1], reader, 1);
    for (const int64_t id : {src, dst}) {
      HALOGEN_USER_CHECK(id >= 0 && id < num_nodes, "%snode id %lld out of range [0, %lld) (num-node-list)",
                         reader.where().c_str(), static_cast<long long>(id), static_cast<long long>(num_nodes));
    }
    edge(src, dst);
    ++count;
    if ((reader.line_number() & 0xFFFF) == 0) progress.update(reader.line_number());
  }
  progress.finish();
  HALOGEN_USER_CHECK(count == num_edges, "%s: %lld edges, but num-edge-list says %lld", path.c_str(),
                     static_cast<long long>(count), static_cast<long long>(num_edges));
}

// The file's num_classes and num_features attributes from `summary`, then the splits (split/<scheme>/{train,valid,
// test}.csv(.gz); scheme "" = the only one; no split/ = empty splits, warned), ids checked in [0, N), unique per
// split and the three disjoint, with file and line (the first error in reading order), written to
// /split/{train,valid,test}; summary's train/valid/test counts set.
void write_splits(const std::string& dir, const std::string& scheme, int64_t num_nodes, h5::File& file,
                  BufferBudget& budget, ConvertSummary* summary);

// The single count of num-node-list / num-edge-list (one line, >= 0); UserError naming file and line.
int64_t read_single_count(const std::string& path, const char* what);
// raw/num-edge-list's count, refused when 0 (a graph without edges).
int64_t read_edge_count(const std::string& dir);

// split/<scheme> as write_splits chooses it (scheme "" = the only one); "" with a warning when there is no
// split/ directory. The split file NAME.csv.gz (or NAME.csv) in it; UserError when neither exists.
std::string choose_split_dir(const std::string& dir, const std::string& scheme);
std::string find_split_file(const std::filesystem::path& dir, const std::string& name);

// The arrays of an OGB npz dataset, opened and their shapes checked against each other (nothing of the node
// count's size is allocated before node_feat's and node_label's shapes confirm it).
struct NpzInputs {
  std::string data_path, label_path;
  std::unique_ptr<NpzArchive> data, labels;
  std::unique_ptr<NpyReader> edge_reader, feature_reader, label_reader;
  int64_t num_nodes = 0, num_edges = 0;
};

NpzInputs open_npz_inputs(const std::string& dir);

// Name for the graph: options.name, else the directory's last component.
std::string default_name(const std::string& dir, const std::string& given);

}  // namespace halogen::io::ogb
