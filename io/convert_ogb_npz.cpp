#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/declared_sizes.h"
#include "io/npz.h"
#include "io/numpy_dtype.h"
#include "io/ogb_layout.h"

namespace halogen::io {

namespace fs = std::filesystem;

ogb::NpzInputs ogb::open_npz_inputs(const std::string& dir) {
  ogb::NpzInputs in;
  in.data_path = (fs::path(dir) / "raw" / "data.npz").string();
  in.data = std::make_unique<NpzArchive>(in.data_path);
  const NpzArchive& data = *in.data;
  const std::string& data_path = in.data_path;

  // edge_index [2, E]: all sources, then all targets (C order).
  in.edge_reader = data.open("edge_index");
  const auto& edge_shape = in.edge_reader->header().shape;
  HALOGEN_USER_CHECK(edge_shape.size() == 2 && edge_shape[0] == 2,
                     "%s: edge_index: expected shape (2, E), found %s", data_path.c_str(),
                     numpy_shape_text(edge_shape).c_str());
  in.num_edges = edge_shape[1];
  HALOGEN_USER_CHECK(in.num_edges > 0, "%s: edge_index: no edges, shape %s (a graph without edges)",
                     data_path.c_str(), numpy_shape_text(edge_shape).c_str());

  if (data.has("num_nodes_list")) {
    auto reader = data.open("num_nodes_list");
    HALOGEN_USER_CHECK(reader->header().count() == 1,
                       "%s: num_nodes_list: %lld graphs; only node-property datasets "
                       "with one graph are supported",
                       data_path.c_str(), static_cast<long long>(reader->header().count()));
    reader->read(&in.num_nodes, 1);
  } else {
    HALOGEN_USER_CHECK(data.has("node_feat"), "%s: neither num_nodes_list nor node_feat gives the node count",
                       data_path.c_str());
    const std::vector<int64_t> shape = data.open("node_feat")->header().shape;
    HALOGEN_USER_CHECK(shape.size() == 2, "%s: node_feat: expected shape (N, F), found %s", data_path.c_str(),
                       numpy_shape_text(shape).c_str());
    in.num_nodes = shape[0];
  }
  // Check the feature shape before allocating anything of size num_nodes.
  if (data.has("node_feat")) {
    in.feature_reader = data.open("node_feat");
    const auto& shape = in.feature_reader->header().shape;
    HALOGEN_USER_CHECK(shape.size() == 2 && shape[0] == in.num_nodes,
                       "%s: node_feat: expected shape (%lld, F), found %s", data_path.c_str(),
                       static_cast<long long>(in.num_nodes), numpy_shape_text(shape).c_str());
  }
  HALOGEN_USER_CHECK(in.num_nodes >= 0, "%s: num_nodes_list: negative node count", data_path.c_str());
  // The label array's shape, like node_feat's, confirms the node count before anything of that size exists.
  in.label_path = (fs::path(dir) / "raw" / "node-label.npz").string();
  std::error_code ec;
  if (fs::is_regular_file(in.label_path, ec)) {
    in.labels = std::make_unique<NpzArchive>(in.label_path);
    HALOGEN_USER_CHECK(!in.labels->names().empty(), "%s: no arrays in the archive (expected node_label)",
                       in.label_path.c_str());
    in.label_reader =
        in.labels->open(in.labels->has("node_label") ? "node_label" : in.labels->names().front());
    const auto& shape = in.label_reader->header().shape;
    HALOGEN_USER_CHECK((shape.size() == 1 && shape[0] == in.num_nodes) ||
                           (shape.size() == 2 && shape[0] == in.num_nodes && shape[1] == 1),
                       "%s: node_label: expected shape (%lld,) or (%lld, 1), found %s", in.label_path.c_str(),
                       static_cast<long long>(in.num_nodes), static_cast<long long>(in.num_nodes),
                       numpy_shape_text(shape).c_str());
  }
  return in;
}

graph::Graph convert_ogb_npz(const ConvertOptions& options) {
  const std::string& dir = options.input;
  ogb::NpzInputs in = ogb::open_npz_inputs(dir);
  const std::string& data_path = in.data_path;
  const std::string& label_path = in.label_path;
  std::unique_ptr<NpyReader>& edge_reader = in.edge_reader;
  std::unique_ptr<NpyReader>& feature_reader = in.feature_reader;
  std::unique_ptr<NpyReader>& label_reader = in.label_reader;
  const int64_t num_edges = in.num_edges;
  graph::Graph g;
  g.name = ogb::default_name(dir, options.name);
  g.directed = options.directed;
  g.num_nodes = in.num_nodes;
  if (!feature_reader && !label_reader) {
    check_declared_graph(data_path + ": ", "num_nodes_list", g.num_nodes, num_edges);
  } else {
    const int64_t feature_bytes =
        feature_reader ? saturating_bytes(g.num_nodes, 4 * feature_reader->header().shape[1]) : 0;
    check_memory_fits(csr_build_bytes(g.num_nodes, num_edges) + feature_bytes,
                      strformat("%s: a graph of %lld vertices and %lld edges", data_path.c_str(),
                                static_cast<long long>(g.num_nodes), static_cast<long long>(num_edges)));
  }
  graph::EdgeList edges;
  edges.src.resize(static_cast<size_t>(num_edges));
  edges.dst.resize(static_cast<size_t>(num_edges));
  edge_reader->read(edges.src.data(), num_edges);
  edge_reader->read(edges.dst.data(), num_edges);
  edge_reader.reset();
  for (int64_t e = 0; e < num_edges; ++e) {
    for (const int64_t id : {edges.src[e], edges.dst[e]}) {
      HALOGEN_USER_CHECK(id >= 0 && id < g.num_nodes,
                         "%s: edge_index: edge %lld: node id %lld out of range [0, %lld)", data_path.c_str(),
                         static_cast<long long>(e), static_cast<long long>(id),
                         static_cast<long long>(g.num_nodes));
    }
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);

  if (feature_reader) {
    NpyReader* reader = feature_reader.get();
    g.num_features = reader->header().shape[1];
    g.features.resize(static_cast<size_t>(g.num_nodes * g.num_features));
    reader->read(g.features.data(), static_cast<int64_t>(g.features.size()));
    feature_reader.reset();
    for (size_t i = 0; i < g.features.size(); ++i) {
      HALOGEN_USER_CHECK(std::isfinite(g.features[i]), "%s: node_feat: row %zu, column %zu: not finite",
                         data_path.c_str(), i / static_cast<size_t>(g.num_features),
                         i % static_cast<size_t>(g.num_features));
    }
  }

  if (label_reader) {
    std::vector<double> values(static_cast<size_t>(g.num_nodes));
    label_reader->read(values.data(), g.num_nodes);
    label_reader.reset();
    g.labels.resize(values.size());
    for (size_t v = 0; v < values.size(); ++v) {
      g.labels[v] =
          ogb::label_from_value(values[v], label_path + ": node_label: index " + std::to_string(v) + ": ");
    }
    ogb::set_num_classes(&g);
  }
  ogb::read_splits(dir, options.split, &g);
  return g;
}

}  // namespace halogen::io
