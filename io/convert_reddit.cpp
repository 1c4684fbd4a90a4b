// Reddit as GraphSAGE, DGL and PyG publish it (reddit.zip): reddit_data.npz (feature, label, node_types) and
// reddit_graph.npz (scipy.sparse.save_npz of a COO adjacency) -> Graph, exactly as the graph_from_arrays
// snippet in datasets/README.md builds it (tests/io/convert_reddit.sh compares them).
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/memory.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/declared_sizes.h"
#include "io/input_file.h"
#include "io/npz.h"
#include "io/numpy_dtype.h"
#include "io/ogb_layout.h"

namespace halogen::io {

namespace fs = std::filesystem;

namespace {

// An array of one value per node: shape (N,) or (N, 1).
std::unique_ptr<NpyReader> open_node_array(const NpzArchive& archive, const std::string& name, int64_t n) {
  auto reader = archive.open(name);
  const auto& shape = reader->header().shape;
  HALOGEN_USER_CHECK(
      (shape.size() == 1 && shape[0] == n) || (shape.size() == 2 && shape[0] == n && shape[1] == 1),
      "%s: %s: expected shape (%lld,) (one value per row of feature), found %s", archive.path().c_str(),
      name.c_str(), static_cast<long long>(n), numpy_shape_text(shape).c_str());
  return reader;
}

}  // namespace

graph::Graph convert_reddit(const ConvertOptions& options) {
  const std::string data_path = (fs::path(options.input) / "reddit_data.npz").string();
  const std::string graph_path = (fs::path(options.input) / "reddit_graph.npz").string();
  check_input_file(data_path);
  check_input_file(graph_path);
  const NpzArchive data(data_path);
  const NpzArchive adjacency(graph_path);

  auto feature_reader = data.open("feature");
  const std::vector<int64_t> feature_shape = feature_reader->header().shape;
  HALOGEN_USER_CHECK(feature_shape.size() == 2, "%s: feature: expected shape (N, F), found %s",
                     data_path.c_str(), numpy_shape_text(feature_shape).c_str());
  graph::Graph g;
  g.name = options.name.empty() ? "reddit" : options.name;
  g.directed = options.directed;
  g.num_nodes = feature_shape[0];
  g.num_features = feature_shape[1];
  auto label_reader = open_node_array(data, "label", g.num_nodes);
  auto type_reader = open_node_array(data, "node_types", g.num_nodes);

  // A COO matrix as scipy.sparse.save_npz writes it (row, col, data, shape, format); data is not read (the
  // snippet keeps no weights) and neither is format (a string, which the npz reader does not decode).
  HALOGEN_USER_CHECK(adjacency.has("row") && adjacency.has("col"),
                     "%s: expected a SciPy COO matrix (arrays row and col; save it with "
                     "scipy.sparse.save_npz(path, matrix.tocoo()))",
                     graph_path.c_str());
  auto row_reader = adjacency.open("row");
  auto col_reader = adjacency.open("col");
  const int64_t num_edges = row_reader->header().count();
  HALOGEN_USER_CHECK(row_reader->header().shape.size() == 1 && col_reader->header().shape.size() == 1 &&
                         col_reader->header().count() == num_edges,
                     "%s: row and col: expected two arrays of shape (E,), found %s and %s",
                     graph_path.c_str(), numpy_shape_text(row_reader->header().shape).c_str(),
                     numpy_shape_text(col_reader->header().shape).c_str());
  check_memory_fits(
      csr_build_bytes(g.num_nodes, num_edges) + saturating_bytes(g.num_nodes, 4 * g.num_features),
      strformat("%s: a graph of %lld vertices and %lld edges", graph_path.c_str(),
                static_cast<long long>(g.num_nodes), static_cast<long long>(num_edges)));

  graph::EdgeList edges;
  edges.src.resize(static_cast<size_t>(num_edges));
  edges.dst.resize(static_cast<size_t>(num_edges));
  row_reader->read(edges.src.data(), num_edges);
  col_reader->read(edges.dst.data(), num_edges);
  row_reader.reset();
  col_reader.reset();
  for (int64_t e = 0; e < num_edges; ++e) {
    for (const int64_t id : {edges.src[e], edges.dst[e]}) {
      HALOGEN_USER_CHECK(id >= 0 && id < g.num_nodes,
                         "%s: %s: entry %lld: node id %lld out of range [0, %lld)", graph_path.c_str(),
                         id == edges.src[e] ? "row" : "col", static_cast<long long>(e),
                         static_cast<long long>(id), static_cast<long long>(g.num_nodes));
    }
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);

  g.features.resize(static_cast<size_t>(g.num_nodes * g.num_features));
  feature_reader->read(g.features.data(), static_cast<int64_t>(g.features.size()));
  feature_reader.reset();
  for (size_t i = 0; i < g.features.size(); ++i) {
    HALOGEN_USER_CHECK(std::isfinite(g.features[i]), "%s: feature: row %zu, column %zu: not finite",
                       data_path.c_str(), i / static_cast<size_t>(g.num_features),
                       i % static_cast<size_t>(g.num_features));
  }

  std::vector<int64_t> labels(static_cast<size_t>(g.num_nodes));
  label_reader->read(labels.data(), g.num_nodes);
  label_reader.reset();
  g.labels.resize(labels.size());
  for (size_t v = 0; v < labels.size(); ++v) {
    HALOGEN_USER_CHECK(labels[v] < 2147483647, "%s: label: index %zu: label %lld out of range",
                       data_path.c_str(), v, static_cast<long long>(labels[v]));
    g.labels[v] = labels[v] < 0 ? -1 : static_cast<int32_t>(labels[v]);  // negative = unlabeled
  }
  ogb::set_num_classes(&g);

  std::vector<double> types(static_cast<size_t>(g.num_nodes));
  type_reader->read(types.data(), g.num_nodes);
  type_reader.reset();
  for (int64_t v = 0; v < g.num_nodes; ++v) {
    if (types[v] == 1)
      g.train.push_back(v);
    else if (types[v] == 2)
      g.valid.push_back(v);
    else if (types[v] == 3)
      g.test.push_back(v);
  }
  return g;
}

}  // namespace halogen::io
