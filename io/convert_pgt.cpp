// PyTorch-Geometric-Temporal JSON (static edge set + node series) -> dynamic graph (io/temporal.h); the
// per-period layout is in convert_pgt_periods.cpp.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "graph/build.h"
#include "io/input_file.h"
#include "io/json_text.h"
#include "io/pgt_json.h"
#include "io/temporal.h"

namespace halogen::io {

namespace pgt {

using nlohmann::json;

int64_t integer_at(const json& value, const std::string& where) {
  HALOGEN_USER_CHECK(value.is_number_integer(), "%snot an integer (%s)", where.c_str(),
                     value.dump().substr(0, 40).c_str());
  return value.get<int64_t>();
}

double number_at(const json& value, const std::string& where) {
  HALOGEN_USER_CHECK(value.is_number() && std::isfinite(value.get<double>()), "%snot a finite number (%s)",
                     where.c_str(), value.dump().substr(0, 40).c_str());
  return value.get<double>();
}

int64_t node_count(const json& doc, const json& series, const std::string& series_key,
                   const std::string& path) {
  if (doc.contains("node_ids")) {
    HALOGEN_USER_CHECK(doc["node_ids"].is_object() || doc["node_ids"].is_array(),
                       "%s: \"node_ids\": expected an object {name: id}", path.c_str());
    return static_cast<int64_t>(doc["node_ids"].size());
  }
  HALOGEN_USER_CHECK(series[0].is_array(), "%s: \"%s\"[0]: expected a list of node values", path.c_str(),
                     series_key.c_str());
  return static_cast<int64_t>(series[0].size());
}

std::vector<float> read_series(const json& series, const std::string& series_key, int64_t n,
                               const std::string& path) {
  const int64_t steps = static_cast<int64_t>(series.size());
  std::vector<float> values(static_cast<size_t>(steps * n));
  for (int64_t t = 0; t < steps; ++t) {
    const json& row = series[t];
    HALOGEN_USER_CHECK(row.is_array() && static_cast<int64_t>(row.size()) == n,
                       "%s: \"%s\"[%lld]: expected a list of %lld node values, found %s", path.c_str(),
                       series_key.c_str(), static_cast<long long>(t), static_cast<long long>(n),
                       row.is_array() ? std::to_string(row.size()).c_str() : "no list");
    for (int64_t v = 0; v < n; ++v) {
      values[t * n + v] = static_cast<float>(
          number_at(row[v], strformat("%s: \"%s\"[%lld][%lld]: ", path.c_str(), series_key.c_str(),
                                      static_cast<long long>(t), static_cast<long long>(v))));
    }
  }
  return values;
}

}  // namespace pgt

using nlohmann::json;
using pgt::integer_at;
using pgt::number_at;

graph::Graph convert_pgt_json(const ConvertOptions& options) {
  const std::string& path = options.input;
  check_input_file(path);
  std::ifstream in(path);
  HALOGEN_USER_CHECK(in.good(), "%s: cannot open", path.c_str());
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {  // any json::exception (1e400 is out_of_range), or a failing read
    throw UserError(strformat("%s: not valid JSON (%s)", path.c_str(), json_reason(e.what()).c_str()));
  }
  HALOGEN_USER_CHECK(doc.is_object(), "%s: expected a JSON object at the top level", path.c_str());
  if (doc.contains("edge_mapping")) return pgt::convert_periods(doc, options);  // England COVID layout
  if (doc.contains("nodes") && doc.contains("links")) return pgt::convert_montevideo(doc, options);
  if (doc.contains("time_periods") && doc.contains("0"))
    return pgt::convert_tennis(doc, options);  // Twitter tennis
  HALOGEN_USER_CHECK(doc.contains("edges") && doc["edges"].is_array(), "%s: \"edges\": missing or not a list",
                     path.c_str());
  const char* series_key = doc.contains("FX") ? "FX" : "X";
  HALOGEN_USER_CHECK(doc.contains(series_key) && doc[series_key].is_array() && !doc[series_key].empty(),
                     "%s: neither \"FX\" nor \"X\" (the node series, T rows of N values) is a non-empty list",
                     path.c_str());
  const json& series = doc[series_key];
  const json& edge_list = doc["edges"];

  graph::Graph g;
  g.name = options.name.empty() ? std::filesystem::path(path).stem().string() : options.name;
  g.directed = options.directed;
  g.num_nodes = pgt::node_count(doc, series, series_key, path);
  const int64_t n = g.num_nodes;

  // The series: T rows of exactly N values.
  const int64_t steps = static_cast<int64_t>(series.size());
  g.target_steps = steps;
  g.targets = pgt::read_series(series, series_key, n, path);

  HALOGEN_USER_CHECK(!edge_list.empty(), "%s: \"edges\" is empty: every snapshot would have no edges",
                     path.c_str());
  const bool weighted = doc.contains("weights");
  if (weighted) {
    HALOGEN_USER_CHECK(doc["weights"].is_array() && doc["weights"].size() == edge_list.size(),
                       "%s: \"weights\": expected a list of %zu numbers (one per edge)", path.c_str(),
                       edge_list.size());
  }
  graph::EdgeList edges;
  for (size_t i = 0; i < edge_list.size(); ++i) {
    const std::string where = strformat("%s: \"edges\"[%zu]: ", path.c_str(), i);
    const json& pair = edge_list[i];
    HALOGEN_USER_CHECK(pair.is_array() && pair.size() == 2, "%sexpected [source, target]", where.c_str());
    const int64_t src = integer_at(pair[0], where), dst = integer_at(pair[1], where);
    HALOGEN_USER_CHECK(src >= 0 && src < n && dst >= 0 && dst < n, "%snode id %lld out of range [0, %lld)",
                       where.c_str(), static_cast<long long>(src < 0 || src >= n ? src : dst),
                       static_cast<long long>(n));
    edges.src.push_back(src);
    edges.dst.push_back(dst);
    if (weighted) {
      edges.weight.push_back(static_cast<float>(
          number_at(doc["weights"][i], strformat("%s: \"weights\"[%zu]: ", path.c_str(), i))));
    }
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  build.drop_self_loops = true;
  g.adjacency = graph::build_csr(n, std::move(edges), build);
  HALOGEN_USER_CHECK(g.adjacency.nnz() > 0,
                     "%s: \"edges\": only self-loops, so every snapshot would have no edges", path.c_str());
  g.snapshots.assign(static_cast<size_t>(steps), g.adjacency);
  return g;
}

}  // namespace halogen::io
