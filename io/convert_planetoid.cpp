// Planetoid (Cora, CiteSeer, PubMed as Kipf & Welling / Yang et al. publish them): ind.NAME.* pickles ->
// Graph, with exactly the semantics of scripts/convert_planetoid.py (the reference; tests/io compares them).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/memory.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/pickle.h"

namespace halogen::io {

namespace fs = std::filesystem;

namespace {

// A dense float32 matrix, as np.asarray(m.todense() if sparse else m, dtype=np.float32) gives it.
struct Dense {
  int64_t rows = 0, cols = 0;
  std::vector<float> values;  // [rows, cols] row-major
};

Dense to_dense(const pickle::Value& value, bool sparse_allowed, const std::string& where) {
  Dense m;
  if (sparse_allowed && value.kind == pickle::Value::Kind::kObject &&
      value.type->is_global("scipy.sparse.csr_matrix")) {
    const pickle::CsrMatrix csr = pickle::as_csr_matrix(value, where);
    m.rows = csr.rows;
    m.cols = csr.cols;
    check_memory_fits(saturating_bytes(saturating_bytes(m.rows, m.cols), sizeof(double) + sizeof(float)),
                      strformat("%sa dense %lld x %lld matrix", where.c_str(), static_cast<long long>(m.rows),
                                static_cast<long long>(m.cols)));
    // todense() sums duplicate entries in the matrix's own dtype, then the cast to float32.
    const std::vector<double> data = csr.data.to_double();
    const bool float32 = csr.data.kind == 'f' && csr.data.item_size == 4;
    std::vector<double> sums(static_cast<size_t>(m.rows * m.cols), 0.0);
    for (int64_t r = 0; r < m.rows; ++r) {
      for (int64_t k = csr.indptr[r]; k < csr.indptr[r + 1]; ++k) {
        double& cell = sums[static_cast<size_t>(r * m.cols + csr.indices[k])];
        cell = float32 ? static_cast<double>(static_cast<float>(cell) + static_cast<float>(data[k]))
                       : cell + data[k];
      }
    }
    m.values.assign(sums.begin(), sums.end());
    return m;
  }
  const pickle::Array array = pickle::as_ndarray(value, where);
  HALOGEN_USER_CHECK(array.shape.size() == 2, "%sexpected a 2-dimensional array, found %zu dimensions",
                     where.c_str(), array.shape.size());
  m.rows = array.shape[0];
  m.cols = array.shape[1];
  const std::vector<double> values = array.to_double();
  m.values.assign(values.begin(), values.end());
  return m;
}

std::string part_path(const std::string& dir, const std::string& name, const char* part) {
  return (fs::path(dir) / ("ind." + name + "." + part)).string();
}

// convert_planetoid.py's load(): a readable pickle holding a matrix (or, for graph, a dict).
std::unique_ptr<pickle::Document> load_part(const std::string& dir, const std::string& name,
                                            const char* part) {
  auto doc = std::make_unique<pickle::Document>(part_path(dir, name, part));
  const pickle::Value& root = doc->root();
  const bool is_graph = std::string(part) == "graph";
  const bool is_matrix = root.kind == pickle::Value::Kind::kObject;  // ndarray or csr_matrix, checked on use
  HALOGEN_USER_CHECK(is_graph ? root.kind == pickle::Value::Kind::kDict : is_matrix,
                     "%s: expected %s, found %s", doc->path().c_str(),
                     is_graph ? "a dict of adjacency lists" : "a matrix", pickle::type_name(root).c_str());
  return doc;
}

std::vector<int64_t> read_test_index(const std::string& path) {
  std::ifstream in(path);
  HALOGEN_USER_CHECK(in.good(), "%s: cannot open for reading", path.c_str());
  std::vector<int64_t> ids;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r\f\v");
    if (first == std::string::npos) continue;
    const size_t last = line.find_last_not_of(" \t\r\f\v");
    const std::string token = line.substr(first, last - first + 1);
    size_t used = 0;
    int64_t id = 0;
    try {
      id = std::stoll(token, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    HALOGEN_USER_CHECK(used == token.size() && used > 0, "%s: line %lld: '%s' is not an integer",
                       path.c_str(), static_cast<long long>(number), token.substr(0, 40).c_str());
    ids.push_back(id);
  }
  HALOGEN_USER_CHECK(!ids.empty(), "%s: no test node ids", path.c_str());
  return ids;
}

}  // namespace

std::string planetoid_name(const std::string& dir, const std::string& given) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    const std::string prefix = "ind.", suffix = ".graph";
    if (file.size() > prefix.size() + suffix.size() && file.compare(0, prefix.size(), prefix) == 0 &&
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0)
      names.push_back(file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()));
  }
  HALOGEN_USER_CHECK(!ec, "%s: cannot list the directory (%s)", dir.c_str(), ec.message().c_str());
  std::sort(names.begin(), names.end());
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  if (!given.empty()) {
    HALOGEN_USER_CHECK(std::find(names.begin(), names.end(), given) != names.end(),
                       "%s: no Planetoid set '%s' (no ind.%s.graph; found: %s)", dir.c_str(), given.c_str(),
                       given.c_str(), list.empty() ? "none" : list.c_str());
    return given;
  }
  HALOGEN_USER_CHECK(!names.empty(), "%s: no Planetoid files (ind.NAME.graph and the other ind.NAME.* parts)",
                     dir.c_str());
  HALOGEN_USER_CHECK(names.size() == 1, "%s: holds several Planetoid sets (%s); choose one with --name",
                     dir.c_str(), list.c_str());
  return names.front();
}

graph::Graph convert_planetoid(const ConvertOptions& options) {
  const std::string& dir = options.input;
  const std::string name = planetoid_name(dir, options.name);
  auto x = load_part(dir, name, "x");
  auto y = load_part(dir, name, "y");
  auto tx = load_part(dir, name, "tx");
  auto ty = load_part(dir, name, "ty");
  auto allx = load_part(dir, name, "allx");
  auto ally = load_part(dir, name, "ally");
  auto adjacency = load_part(dir, name, "graph");
  const std::string index_path = part_path(dir, name, "test.index");
  const std::vector<int64_t> test_index = read_test_index(index_path);
  std::vector<int64_t> sorted_test = test_index;
  std::sort(sorted_test.begin(), sorted_test.end());
  const auto twice = std::adjacent_find(sorted_test.begin(), sorted_test.end());
  HALOGEN_USER_CHECK(twice == sorted_test.end(), "%s: node %lld is listed twice", index_path.c_str(),
                     static_cast<long long>(twice == sorted_test.end() ? 0 : *twice));

  // x is only checked (the standard loaders read it; its rows are allx's first rows).
  to_dense(x->root(), true, x->path() + ": ");
  const pickle::Array y_array = pickle::as_ndarray(y->root(), y->path() + ": ");
  HALOGEN_USER_CHECK(!y_array.shape.empty(), "%s: expected an array of rows, found a scalar",
                     y->path().c_str());
  const int64_t num_train = y_array.shape[0];

  Dense test_features = to_dense(tx->root(), true, tx->path() + ": ");
  Dense test_onehot = to_dense(ty->root(), false, ty->path() + ": ");
  const Dense features_head = to_dense(allx->root(), true, allx->path() + ": ");
  const Dense onehot_head = to_dense(ally->root(), false, ally->path() + ": ");
  HALOGEN_USER_CHECK(test_features.rows == test_onehot.rows, "%s: %lld rows, but %s has %lld",
                     tx->path().c_str(), static_cast<long long>(test_features.rows), ty->path().c_str(),
                     static_cast<long long>(test_onehot.rows));
  HALOGEN_USER_CHECK(features_head.rows == onehot_head.rows, "%s: %lld rows, but %s has %lld",
                     allx->path().c_str(), static_cast<long long>(features_head.rows), ally->path().c_str(),
                     static_cast<long long>(onehot_head.rows));
  HALOGEN_USER_CHECK(features_head.cols == test_features.cols, "%s: %lld columns, but %s has %lld",
                     allx->path().c_str(), static_cast<long long>(features_head.cols), tx->path().c_str(),
                     static_cast<long long>(test_features.cols));
  HALOGEN_USER_CHECK(onehot_head.cols == test_onehot.cols, "%s: %lld columns, but %s has %lld",
                     ally->path().c_str(), static_cast<long long>(onehot_head.cols), ty->path().c_str(),
                     static_cast<long long>(test_onehot.cols));

  // CiteSeer: some ids in [min, max] of test.index have no row in tx; give them zero rows.
  const int64_t first_test = sorted_test.front();
  HALOGEN_USER_CHECK(first_test >= 0, "%s: node id %lld is negative", index_path.c_str(),
                     static_cast<long long>(first_test));
  const int64_t range_size = sorted_test.back() - first_test + 1;
  if (range_size != test_features.rows) {
    HALOGEN_USER_CHECK(test_features.rows == static_cast<int64_t>(sorted_test.size()),
                       "%s: %lld rows for %zu test ids (in a range of %lld)", tx->path().c_str(),
                       static_cast<long long>(test_features.rows), sorted_test.size(),
                       static_cast<long long>(range_size));
    for (Dense* m : {&test_features, &test_onehot}) {
      std::vector<float> full(static_cast<size_t>(range_size * m->cols), 0.0f);
      for (size_t j = 0; j < sorted_test.size(); ++j)
        std::copy_n(m->values.begin() + static_cast<std::ptrdiff_t>(j * m->cols), m->cols,
                    full.begin() + static_cast<std::ptrdiff_t>((sorted_test[j] - first_test) * m->cols));
      m->values = std::move(full);
      m->rows = range_size;
    }
  }

  graph::Graph g;
  g.name = name;
  g.directed = options.directed;
  g.num_nodes = features_head.rows + test_features.rows;
  g.num_features = features_head.cols;
  const int64_t num_classes = onehot_head.cols;
  HALOGEN_USER_CHECK(sorted_test.back() < g.num_nodes, "%s: node %lld has no feature row (%lld rows)",
                     index_path.c_str(), static_cast<long long>(sorted_test.back()),
                     static_cast<long long>(g.num_nodes));
  HALOGEN_USER_CHECK(num_train <= g.num_nodes, "%s: %lld training rows, but the graph has %lld nodes",
                     y->path().c_str(), static_cast<long long>(num_train),
                     static_cast<long long>(g.num_nodes));
  std::vector<float> onehot;
  g.features = features_head.values;
  g.features.insert(g.features.end(), test_features.values.begin(), test_features.values.end());
  onehot = onehot_head.values;
  onehot.insert(onehot.end(), test_onehot.values.begin(), test_onehot.values.end());
  // The test rows are stored in sorted-id order; put each at its test.index position.
  for (auto [values, width] : {std::pair{&g.features, g.num_features}, std::pair{&onehot, num_classes}}) {
    std::vector<float> rows(sorted_test.size() * static_cast<size_t>(width));
    for (size_t j = 0; j < sorted_test.size(); ++j)
      std::copy_n(values->begin() + static_cast<std::ptrdiff_t>(sorted_test[j] * width), width,
                  rows.begin() + static_cast<std::ptrdiff_t>(j * width));
    for (size_t j = 0; j < test_index.size(); ++j)
      std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(j * width), width,
                  values->begin() + static_cast<std::ptrdiff_t>(test_index[j] * width));
  }
  for (size_t i = 0; i < g.features.size(); ++i) {
    HALOGEN_USER_CHECK(std::isfinite(g.features[i]), "%s, %s: node %lld: feature value is not finite",
                       allx->path().c_str(), tx->path().c_str(),
                       static_cast<long long>(i / static_cast<size_t>(std::max<int64_t>(g.num_features, 1))));
  }
  // Label = the first largest one-hot column of a row with a positive sum, else -1 (unlabeled).
  g.num_classes = static_cast<int32_t>(num_classes);
  g.labels.assign(static_cast<size_t>(g.num_nodes), -1);
  for (int64_t v = 0; v < g.num_nodes && num_classes > 0; ++v) {
    const float* row = onehot.data() + v * num_classes;
    double sum = 0;
    for (int64_t c = 0; c < num_classes; ++c) sum += row[c];
    if (sum > 0) g.labels[v] = static_cast<int32_t>(std::max_element(row, row + num_classes) - row);
  }

  graph::EdgeList edges;
  const auto& entries = adjacency->root().items;
  for (size_t i = 0; i + 1 < entries.size(); i += 2) {
    const pickle::Value& node = *entries[i];
    const pickle::Value& neighbours = *entries[i + 1];
    HALOGEN_USER_CHECK(node.kind == pickle::Value::Kind::kInt, "%s: key of type %s (node ids are ints)",
                       adjacency->path().c_str(), pickle::type_name(node).c_str());
    HALOGEN_USER_CHECK(
        neighbours.kind == pickle::Value::Kind::kList || neighbours.kind == pickle::Value::Kind::kTuple,
        "%s: node %lld: expected a list of neighbours, found %s", adjacency->path().c_str(),
        static_cast<long long>(node.integer), pickle::type_name(neighbours).c_str());
    for (const pickle::Value* neighbour : neighbours.items) {
      HALOGEN_USER_CHECK(neighbour->kind == pickle::Value::Kind::kInt,
                         "%s: node %lld: neighbour of type %s (node ids are ints)", adjacency->path().c_str(),
                         static_cast<long long>(node.integer), pickle::type_name(*neighbour).c_str());
      for (const int64_t id : {node.integer, neighbour->integer}) {
        HALOGEN_USER_CHECK(id >= 0 && id < g.num_nodes, "%s: node %lld has no feature row (%lld rows)",
                           adjacency->path().c_str(), static_cast<long long>(id),
                           static_cast<long long>(g.num_nodes));
      }
      edges.src.push_back(node.integer);
      edges.dst.push_back(neighbour->integer);
    }
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);

  for (int64_t v = 0; v < num_train; ++v) g.train.push_back(v);
  for (int64_t v = num_train; v < std::min(num_train + options.valid_size, g.num_nodes); ++v)
    g.valid.push_back(v);
  g.test = test_index;
  return g;
}

}  // namespace halogen::io
