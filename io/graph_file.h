#pragma once
// The graph file (DESIGN.md, "Files"): one HDF5 file per graph, format="halogen.graph" format_version=2
// (io/file_format.h).
// Version 2: every dataset carries a Fletcher-32 checksum that every read verifies (io/h5.h). Version 1 files
// (written before checksums) are refused with a message to convert or generate the graph again.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace halogen::h5 {
class File;
}

namespace halogen::io {

inline constexpr int64_t kGraphFileVersion = 2;

// Checks the root attributes format="halogen.graph" and format_version (an earlier file's version) == kGraphFileVersion; a UserError naming the
// file otherwise (version 1: "written by an older Halogen, without checksums; ...").
void check_graph_format(const h5::File& file);

// Reads and validates a whole graph file: shapes agree, indptr monotone and ending at E, ids in range, rows
// sorted without duplicates, labels in [-1, num_classes), split ids unique and in range, features finite.
// Any violation is a UserError naming the file, the dataset path and the first bad index.
graph::Graph read_graph(const std::string& path);

// read_graph without /node/feat: num_features is set from the dataset's shape [N, F] (checked), `features`
// stays empty and the feature values are neither read nor validated (the caller streams them, e.g. with
// h5::File::read_rows / read_selected_rows). Everything else is read and validated as by read_graph.
graph::Graph read_graph_without_features(const std::string& path);

// Writes atomically (a temporary file in the same directory, renamed on success; removed on failure).
void write_graph(const std::string& path, const graph::Graph& graph);

// Whether /node/feat is stored deflated: dense float features shrink ~20% but read ~5x slower, while sparse
// or binary ones (bag-of-words, one-hot) shrink 10-100x and still read fast. Decided on the first MiB of the
// `count` values (all of them when fewer), so a writer that streams rows decides as write_graph does.
bool features_compress_well(const float* features, int64_t count);

// The root attributes write_graph sets (format, version, name and sizes). Writers that stream the datasets
// themselves (io/convert_chunked.h) call it first and set num_edges and num_classes again once known.
void write_graph_attributes(h5::File& file, const std::string& name, int64_t num_nodes, int64_t num_edges,
                            bool directed, int64_t num_classes, int64_t num_features);

// The checks read_graph applies, on a graph in memory (`where` names the file in messages). write_graph
// calls it too, so no invalid file is ever written.
void validate_graph(const graph::Graph& graph, const std::string& where);

// The first id of the three splits (train, valid, test; ids in [0, n), checked by the caller) that an earlier
// split already holds: a vertex in two splits would be evaluated on what it was trained on. Used by
// validate_graph (global ids) and by the shard reader (local ids).
struct SplitOverlap {
  int split = -1;     // 0 train, 1 valid, 2 test: the split where the id is found again; -1: none
  size_t index = 0;   // its position in that split
  int64_t id = 0;
  int earlier = -1;   // the split that holds it first
};
SplitOverlap first_split_overlap(const std::vector<int64_t>* const (&splits)[3], int64_t n);
inline constexpr const char* kSplitPaths[3] = {"/split/train", "/split/valid", "/split/test"};

}  // namespace halogen::io
