#pragma once
// Readers of published graph layouts. Each streams its input, checks every value with its file and line, and
// either writes the graph file itself (OGB csv, OGB npz, SNAP: bounded memory) or returns a Graph ready for
// write_graph() (the others: bounded memory beyond the graph itself).
#include <string>

#include "graph/graph.h"

namespace halogen::io {

struct ConvertOptions {
  std::string input;      // directory (OGB layouts, Planetoid, Reddit) or file (SNAP, Matrix Market)
  std::string split;      // OGB: split scheme under split/; empty = the only one present
  bool directed = false;  // false: symmetrise (store every edge both ways)
  std::string name;       // graph name; empty = derived from the input path (Planetoid: also picks NAME)
  // OGB csv, OGB npz and SNAP (the *_to_file functions): the data buffers stay within this many bytes
  // (io/convert_chunked.h); at least kMinimumConvertLimitBytes, or 0: 3/4 of the available memory.
  int64_t memory_limit_bytes = 0;
  // pgt-json: "pgt" applies the transform PyTorch Geometric Temporal's loader of the layout applies to the
  // targets (per-node standardisation, log1p, or none) and records it; "none" stores the values as given
  // (io/temporal.h, convert_pgt_json).
  std::string preprocess = "pgt";
  // planetoid: validation nodes after the training ones (scripts/convert_planetoid.py --valid-size).
  int64_t valid_size = 500;
};

// What a conversion straight to a file wrote, for the summary line.
struct ConvertSummary {
  int64_t num_nodes = 0, num_edges = 0, num_features = 0;
  int32_t num_classes = 0;
  bool directed = false;
  int64_t train = 0, valid = 0, test = 0;
  int64_t buffer_high_water_bytes = 0;  // the BufferBudget's high-water mark
  int64_t limit_bytes = 0;              // the limit the buffers kept within
  int64_t runs = 0;                     // sorted edge runs spilled to temporary files (0: all fitted)
};

// The conversions of OGB csv, OGB npz and SNAP inputs: the graph file `output` is written (atomically) while
// the input is read, through one pipeline (io/convert_chunked.h): edges by an external sort (in memory when
// they fit), per-node arrays in row blocks, every data buffer within options.memory_limit_bytes (0: 3/4 of
// the available memory). The file is byte-identical to write_graph(output, graph) of the graph it holds.
//
// OGB node-property raw directory: raw/{edge,node-feat,node-label,num-node-list,num-edge-list}.csv.gz and
// split/<scheme>/{train,valid,test}.csv.gz. Edges must be 0 <= id < N; labels NaN/empty = -1 (unlabeled). A
// directory holding raw/data.npz and no raw/edge.csv(.gz) is the npz variant (convert_ogb_npz_to_file).
ConvertSummary convert_ogb_to_file(const ConvertOptions& options, const std::string& output);

// OGB binary variant (ogbn-papers100M): raw/data.npz (edge_index [2,E], node_feat [N,F], num_nodes_list)
// and raw/node-label.npz (node_label [N] or [N,1]); splits as in convert_ogb_to_file.
ConvertSummary convert_ogb_npz_to_file(const ConvertOptions& options, const std::string& output);

// SNAP edge list: '#' (or '%') comment lines, two whitespace-separated ids per line (a third column, if
// present, is ignored). When a "# Nodes: N" header names more vertices than any id, ids are kept and the
// vertices no edge touches stay, isolated (a header with more than 2E + 2^24 vertices is refused as corrupt);
// otherwise ids are arbitrary non-negative integers, remapped to 0..N-1 in increasing order of the original
// id (so already-dense 0..N-1 ids map to themselves), the originals kept in /node/orig_id.
ConvertSummary convert_snap_to_file(const ConvertOptions& options, const std::string& output);

// Matrix Market coordinate: pattern|real|integer, general|symmetric; 1-based indices; the matrix must be
// square. Values become edge weights (pattern: none).
graph::Graph convert_matrix_market(const ConvertOptions& options);

// Planetoid directory (Cora, CiteSeer, PubMed): ind.NAME.{x,y,tx,ty,allx,ally,graph} (Python 2 or 3 pickles,
// io/pickle.h) and ind.NAME.test.index, with the semantics of scripts/convert_planetoid.py: nodes are allx's
// rows, then tx's rows placed at their test.index positions (test ids without a tx row, as in CiteSeer, get
// zero features and label -1); label = argmax of the one-hot row (-1 for an all-zero row), num_classes = its
// width; train = the first |y| nodes, valid = the next options.valid_size (500), test = test.index in file order; name = NAME.
graph::Graph convert_planetoid(const ConvertOptions& options);

// The NAME of the Planetoid set in `dir`: `given` when ind.GIVEN.graph exists, else the only one there
// (UserError when there is none, or several and `given` is empty).
std::string planetoid_name(const std::string& dir, const std::string& given);

// Reddit (GraphSAGE/DGL reddit.zip): reddit_data.npz (feature [N, F], label [N], node_types [N] with
// 1/2/3 = train/valid/test) and reddit_graph.npz (scipy.sparse.save_npz of a COO matrix; its row and col are
// the edges, its values are not kept), as the graph_from_arrays snippet of datasets/README.md builds it;
// name "reddit" unless options.name.
graph::Graph convert_reddit(const ConvertOptions& options);

}  // namespace halogen::io
