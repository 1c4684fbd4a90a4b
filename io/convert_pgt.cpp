// PyTorch-Geometric-Temporal JSON (static edge set + node series; WikiMaths per-period targets) -> dynamic graph
// (io/temporal.h), with the reference loaders' target transforms; the per-period edge layouts are in
// convert_pgt_periods.cpp and convert_pgt_layouts.cpp.
#include <algorithm>
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


namespace {

// The static edge set of doc["edges"] (+ optional "weights"): self-loops dropped, symmetrised unless
// options.directed.
graph::Csr static_edges(const json& doc, int64_t n, const ConvertOptions& options) {
  const std::string& path = options.input;
  HALOGEN_USER_CHECK(doc.contains("edges") && doc["edges"].is_array(), "%s: \"edges\": missing or not a list",
                     path.c_str());
  const json& edge_list = doc["edges"];
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
  graph::Csr csr = graph::build_csr(n, std::move(edges), build);
  HALOGEN_USER_CHECK(csr.nnz() > 0, "%s: \"edges\": only self-loops, so every snapshot would have no edges",
                     path.c_str());
  return csr;
}

std::string graph_name(const ConvertOptions& options) {
  return options.name.empty() ? std::filesystem::path(options.input).stem().string() : options.name;
}

// The text recorded for a transform (g.preprocess.name / formula).
const char* transform_name(Transform t) {
  switch (t) {
    case Transform::standardize_eps:
    case Transform::standardize:
      return "standardize per node";
    case Transform::log1p:
      return "log1p";
    case Transform::none:
      break;
  }
  return "none";
}

std::string transform_formula(Transform t, int64_t steps) {
  switch (t) {
    case Transform::standardize_eps:
      return strformat("(y - mean_v) / (std_v + 1e-10), mean and population std of each node's series over all "
                       "%lld steps",
                       static_cast<long long>(steps));
    case Transform::standardize:
      return strformat("(y - mean_v) / std_v, mean and population std of each node's series over all %lld "
                       "steps",
                       static_cast<long long>(steps));
    case Transform::log1p:
      return "log(1 + y)";
    case Transform::none:
      break;
  }
  return "the values as given";
}

}  // namespace

void preprocess(graph::Graph& g, const Loader& loader, const ConvertOptions& options) {
  const std::string& path = options.input;
  HALOGEN_USER_CHECK(options.preprocess == "pgt" || options.preprocess == "none",
                     "--preprocess: \"%s\": expected pgt or none", options.preprocess.c_str());
  graph::Graph::TargetPreprocess& record = g.preprocess;
  if (options.preprocess == "none") {
    record.name = "none";
    record.formula = loader.transform == Transform::none
                         ? strformat("the values as given, as PGT's %s", loader.name)
                         : strformat("the values as given, by --preprocess none; PGT's %s applies %s",
                                     loader.name, transform_formula(loader.transform, g.target_steps).c_str());
    return;
  }
  record.name = transform_name(loader.transform);
  record.formula = loader.transform == Transform::none
                       ? strformat("the values as given, as PGT's %s", loader.name)
                       : strformat("%s, as PGT's %s", transform_formula(loader.transform, g.target_steps).c_str(),
                                   loader.name);
  const int64_t n = g.num_nodes, steps = g.target_steps;
  if (loader.transform == Transform::log1p) {
    for (int64_t i = 0; i < steps * n; ++i) {
      const float y = g.targets[static_cast<size_t>(i)];
      HALOGEN_USER_CHECK(y > -1.0f, "%s: \"%s\" of period %lld, node %lld: %g: log(1 + y) needs y > -1 (PGT's %s "
                         "transform; --preprocess none keeps the values as given)",
                         path.c_str(), loader.series_key, static_cast<long long>(i / n),
                         static_cast<long long>(i % n), static_cast<double>(y), loader.name);
      g.targets[static_cast<size_t>(i)] = static_cast<float>(std::log1p(static_cast<double>(y)));
    }
    return;
  }
  if (loader.transform == Transform::none) return;
  record.offset.assign(static_cast<size_t>(n), 0.0);
  record.scale.assign(static_cast<size_t>(n), 1.0);
  const double eps = loader.transform == Transform::standardize_eps ? 1e-10 : 0.0;
  for (int64_t v = 0; v < n; ++v) {
    double sum = 0, lo = g.targets[v], hi = lo;
    for (int64_t t = 0; t < steps; ++t) {
      const double y = g.targets[t * n + v];
      sum += y;
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
    const double mean = sum / static_cast<double>(steps);
    double squares = 0;
    for (int64_t t = 0; t < steps; ++t) {
      const double d = g.targets[t * n + v] - mean;
      squares += d * d;
    }
    // A constant series: the reference gives 0/1e-10 or 0/0 there; it is kept as 0 with scale 1.
    const double scale = hi > lo ? std::sqrt(squares / static_cast<double>(steps)) + eps : 1.0;
    record.offset[static_cast<size_t>(v)] = hi > lo ? mean : lo;
    record.scale[static_cast<size_t>(v)] = scale;
    for (int64_t t = 0; t < steps; ++t) {
      float& y = g.targets[static_cast<size_t>(t * n + v)];
      y = hi > lo ? static_cast<float>((y - mean) / scale) : 0.0f;
    }
  }
}

graph::Graph convert_wikimaths(const json& doc, const ConvertOptions& options) {
  const std::string& path = options.input;
  const int64_t periods = integer_at(doc["time_periods"], path + ": \"time_periods\": ");
  HALOGEN_USER_CHECK(periods >= 1, "%s: \"time_periods\" is %lld: expected at least 1", path.c_str(),
                     static_cast<long long>(periods));
  json series = json::array();
  for (int64_t t = 0; t < periods; ++t) {
    const std::string key = std::to_string(t);
    HALOGEN_USER_CHECK(doc.contains(key) && doc[key].is_object() && doc[key].contains("y"),
                       "%s: \"%s\"/\"y\": missing (time_periods is %lld: one object with \"y\" per period 0..%lld)",
                       path.c_str(), key.c_str(), static_cast<long long>(periods),
                       static_cast<long long>(periods - 1));
    series.push_back(doc[key]["y"]);
  }
  graph::Graph g;
  g.name = graph_name(options);
  g.directed = options.directed;
  g.num_nodes = node_count(doc, series, "<period>/y", path);
  g.target_steps = periods;
  g.targets = read_series(series, "<period>/y", g.num_nodes, path);
  g.adjacency = static_edges(doc, g.num_nodes, options);
  g.snapshots.assign(static_cast<size_t>(periods), g.adjacency);
  return g;
}

}  // namespace pgt

using nlohmann::json;

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
  graph::Graph g;
  pgt::Loader loader;
  if (doc.contains("edge_mapping")) {  // England COVID layout
    g = pgt::convert_periods(doc, options);
    loader = {"EnglandCovidDatasetLoader", pgt::Transform::standardize_eps, "y"};
  } else if (doc.contains("nodes") && doc.contains("links")) {
    g = pgt::convert_montevideo(doc, options);
    loader = {"MontevideoBusDatasetLoader", pgt::Transform::standardize, "y"};
  } else if (doc.contains("time_periods") && doc.contains("0") && doc.contains("edges")) {
    g = pgt::convert_wikimaths(doc, options);
    loader = {"WikiMathsDatasetLoader", pgt::Transform::standardize, "y"};
  } else if (doc.contains("time_periods") && doc.contains("0")) {  // Twitter tennis
    g = pgt::convert_tennis(doc, options);
    loader = {"TwitterTennisDatasetLoader", pgt::Transform::log1p, "y"};
  } else {
    const char* series_key = doc.contains("FX") ? "FX" : doc.contains("block") ? "block" : "X";
    HALOGEN_USER_CHECK(doc.contains(series_key) && doc[series_key].is_array() && !doc[series_key].empty(),
                       "%s: none of \"FX\", \"X\" or \"block\" (the node series, T rows of N values) is a "
                       "non-empty list",
                       path.c_str());
    const json& series = doc[series_key];
    g.name = pgt::graph_name(options);
    g.directed = options.directed;
    g.num_nodes = pgt::node_count(doc, series, series_key, path);
    g.target_steps = static_cast<int64_t>(series.size());
    g.targets = pgt::read_series(series, series_key, g.num_nodes, path);  // T rows of exactly N values
    g.adjacency = pgt::static_edges(doc, g.num_nodes, options);
    g.snapshots.assign(static_cast<size_t>(g.target_steps), g.adjacency);
    loader = series_key[0] == 'F'   ? pgt::Loader{"ChickenpoxDatasetLoader", pgt::Transform::none, "FX"}
             : series_key[0] == 'b' ? pgt::Loader{"WindmillOutputDatasetLoader", pgt::Transform::standardize_eps,
                                                  "block"}
                                    : pgt::Loader{"PedalMeDatasetLoader", pgt::Transform::none, "X"};
  }
  pgt::preprocess(g, loader, options);
  return g;
}

}  // namespace halogen::io
