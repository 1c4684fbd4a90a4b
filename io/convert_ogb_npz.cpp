// OGB node-property datasets in the binary variant (ogbn-papers100M: raw/data.npz, raw/node-label.npz): the
// arrays opened and their shapes checked (open_npz_inputs), and convert_ogb_npz_to_file, the conversion
// pipeline of io/convert_chunked.h: edge_index into the sorted /csr, then features and labels in row blocks.
#include <algorithm>
#include <cmath>
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

ConvertSummary convert_ogb_npz_to_file(const ConvertOptions& options, const std::string& output) {
  const std::string& dir = options.input;
  const int64_t limit_bytes = convert_limit_bytes(options.memory_limit_bytes);
  ogb::NpzInputs in = ogb::open_npz_inputs(dir);
  if (!in.feature_reader && !in.label_reader)
    check_isolated_vertices(in.data_path + ": ", "num_nodes_list", in.num_nodes, in.num_edges);
  BufferBudget budget(limit_bytes);
  ConvertSummary summary;
  summary.directed = options.directed;
  summary.limit_bytes = limit_bytes;
  summary.num_nodes = in.num_nodes;
  const int64_t n = in.num_nodes, num_edges = in.num_edges;
  write_atomically(output, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    write_graph_attributes(file, ogb::default_name(dir, options.name), n, 0, options.directed, 0, 0);
    {
      // edge_index [2, E] holds all sources, then all targets: a second reader of the same member, advanced
      // past the sources, gives the targets alongside (it reads the member to its end, so its CRC-32 is
      // checked).
      constexpr int64_t kBlock = 1 << 15;
      const HeldBytes held(budget, 3 * kBlock * 8);
      EntrySorter sorter(output, budget, budget.limit_bytes() - (int64_t{2} << 20), !options.directed);
      std::unique_ptr<NpyReader> targets = in.data->open("edge_index");
      std::vector<int64_t> src(kBlock), dst(kBlock);
      for (int64_t done = 0; done < num_edges;) {
        const int64_t take = std::min(kBlock, num_edges - done);
        targets->read(dst.data(), take);
        done += take;
      }
      log::Progress progress("convert: edges", num_edges);
      for (int64_t done = 0; done < num_edges;) {
        const int64_t take = std::min(kBlock, num_edges - done);
        in.edge_reader->read(src.data(), take);
        targets->read(dst.data(), take);
        for (int64_t i = 0; i < take; ++i) {
          for (const int64_t id : {src[i], dst[i]}) {
            HALOGEN_USER_CHECK(id >= 0 && id < n,
                               "%s: edge_index: edge %lld: node id %lld out of range [0, %lld)",
                               in.data_path.c_str(), static_cast<long long>(done + i),
                               static_cast<long long>(id), static_cast<long long>(n));
          }
          sorter.add_edge(src[i], dst[i]);
        }
        done += take;
        progress.update(done);
      }
      progress.finish();
      in.edge_reader.reset();
      sorter.finish_input();
      summary.runs = sorter.runs_spilled();
      summary.num_edges = write_sorted_csr(sorter, file, output, n, budget);
    }
    if (in.feature_reader) {
      const int64_t columns = in.feature_reader->header().shape[1];
      summary.num_features = columns;
      if (columns > 0) {
        FeatureStreamWriter writer(file, n, columns, budget);
        const int64_t block_rows =
            std::max<int64_t>(1, (int64_t{1} << 18) / columns);  // about 1 MiB of floats
        std::vector<float> block(static_cast<size_t>(block_rows * columns));
        const HeldBytes held(budget, static_cast<int64_t>(block.size() * sizeof(float)));
        for (int64_t row = 0; row < n;) {
          const int64_t take = std::min(block_rows, n - row);
          in.feature_reader->read(block.data(), take * columns);
          for (int64_t i = 0; i < take * columns; ++i) {
            HALOGEN_USER_CHECK(std::isfinite(block[i]), "%s: node_feat: row %lld, column %lld: not finite",
                               in.data_path.c_str(), static_cast<long long>(row + i / columns),
                               static_cast<long long>(i % columns));
          }
          writer.append(block.data(), take);
          row += take;
        }
        writer.finish();
      }
      in.feature_reader.reset();
    }
    if (in.label_reader) {
      constexpr int64_t kBlock = 1 << 15;
      std::vector<double> values(kBlock);
      std::vector<int32_t> labels(kBlock);
      const HeldBytes held(budget, kBlock * 12);
      h5::DatasetWriter<int32_t> writer(file, "/node/label", {n});
      const HeldBytes held_writer(budget, writer.buffer_bytes());
      int32_t max_label = -1;
      for (int64_t v = 0; v < n;) {
        const int64_t take = std::min(kBlock, n - v);
        in.label_reader->read(values.data(), take);
        for (int64_t i = 0; i < take; ++i) {
          labels[i] = ogb::label_from_value(
              values[i], in.label_path + ": node_label: index " + std::to_string(v + i) + ": ");
          max_label = std::max(max_label, labels[i]);
        }
        writer.append(labels.data(), take);
        v += take;
      }
      writer.finish();
      in.label_reader.reset();
      summary.num_classes = max_label + 1;
    }
    ogb::write_splits(dir, options.split, n, file, budget, &summary);
    file.close();
  });
  summary.buffer_high_water_bytes = budget.high_water_bytes();
  return summary;
}

}  // namespace halogen::io
