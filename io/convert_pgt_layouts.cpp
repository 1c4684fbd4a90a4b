// Two more PyTorch-Geometric-Temporal JSON layouts -> dynamic graph (io/temporal.h):
//
// montevideo_bus.json (torch_geometric_temporal/dataset/montevideo_bus.py): one static weighted edge set,
//   "nodes": [{"bus_stop": ID, "y": [T values], "X": {...}}, ...]   vertex i = nodes[i]; ID any number or
//   string "links": [{"source": ID, "target": ID, "weight": w}, ...]       (weight optional, on every link or
//   none)
//   -> T snapshots of the same edges (self-loops dropped, symmetrised unless --directed); targets [T, N] from
//   each node's "y" (convert_pgt_json then standardises each node's series as PGT's loader does, unless
//   --preprocess none).
//
// twitter_tennis_<event>.json (torch_geometric_temporal/dataset/twitter_tennis.py): one edge set per period,
//   "time_periods": T, "0" .. "T-1": {"edges": [[src, dst], ...], "weights": [w, ...] (optional),
//                                      "y": [N values], "X": [N rows] (optional)}
//   -> snapshot t = period t's edges; targets [T, N] = each period's "y" (convert_pgt_json takes log(1 + y)
//   as PGT's loader does, unless --preprocess none; PGT's sample t forecasts period t + 1 from period t's
//   features, Halogen's step forecasts y_t from the --lags values before it). X (degree and transitivity per
//   period) is not kept: the graph file holds
//   one static feature matrix, and the regression task builds its inputs from past target values.
// Every error names the file, the key path and the index.
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "core/error.h"
#include "graph/build.h"
#include "io/pgt_json.h"
#include "io/temporal.h"

namespace halogen::io::pgt {

using nlohmann::json;

namespace {

graph::BuildOptions build_options(const ConvertOptions& options) {
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  build.drop_self_loops = true;
  return build;
}

std::string graph_name(const ConvertOptions& options) {
  return options.name.empty() ? std::filesystem::path(options.input).stem().string() : options.name;
}

}  // namespace

graph::Graph convert_montevideo(const json& doc, const ConvertOptions& options) {
  const std::string& path = options.input;
  const json& nodes = doc["nodes"];
  const json& links = doc["links"];
  HALOGEN_USER_CHECK(nodes.is_array() && !nodes.empty(), "%s: \"nodes\": expected a non-empty list",
                     path.c_str());
  HALOGEN_USER_CHECK(links.is_array() && !links.empty(), "%s: \"links\": expected a non-empty list",
                     path.c_str());
  const int64_t n = static_cast<int64_t>(nodes.size());
  std::map<std::string, int64_t> vertex_of;  // bus_stop (its JSON text) -> vertex
  int64_t steps = -1;
  for (int64_t v = 0; v < n; ++v) {
    const json& node = nodes[v];
    const std::string where = strformat("%s: \"nodes\"[%lld]", path.c_str(), static_cast<long long>(v));
    HALOGEN_USER_CHECK(node.is_object() && node.contains("bus_stop") && node.contains("y"),
                       "%s: expected an object with \"bus_stop\" and \"y\"", where.c_str());
    const json& id = node["bus_stop"];
    HALOGEN_USER_CHECK(id.is_number_integer() || id.is_string(),
                       "%s/\"bus_stop\": expected an integer or a string", where.c_str());
    HALOGEN_USER_CHECK(vertex_of.emplace(id.dump(), v).second, "%s/\"bus_stop\": %s appears twice",
                       where.c_str(), id.dump().c_str());
    const json& y = node["y"];
    HALOGEN_USER_CHECK(y.is_array() && !y.empty(), "%s/\"y\": expected a non-empty list of numbers",
                       where.c_str());
    if (steps < 0) steps = static_cast<int64_t>(y.size());
    HALOGEN_USER_CHECK(static_cast<int64_t>(y.size()) == steps,
                       "%s/\"y\": %zu values, but \"nodes\"[0] has %lld (every node needs one per step)",
                       where.c_str(), y.size(), static_cast<long long>(steps));
  }
  graph::Graph g;
  g.name = graph_name(options);
  g.directed = options.directed;
  g.num_nodes = n;
  g.target_steps = steps;
  g.targets.resize(static_cast<size_t>(steps * n));
  for (int64_t v = 0; v < n; ++v)
    for (int64_t t = 0; t < steps; ++t)
      g.targets[t * n + v] = static_cast<float>(
          number_at(nodes[v]["y"][t], strformat("%s: \"nodes\"[%lld]/\"y\"[%lld]: ", path.c_str(),
                                                static_cast<long long>(v), static_cast<long long>(t))));

  const bool weighted = links[0].is_object() && links[0].contains("weight");
  graph::EdgeList edges;
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string where = strformat("%s: \"links\"[%zu]", path.c_str(), i);
    const json& link = links[i];
    HALOGEN_USER_CHECK(link.is_object() && link.contains("source") && link.contains("target"),
                       "%s: expected an object with \"source\" and \"target\"", where.c_str());
    int64_t ends[2];
    const char* keys[2] = {"source", "target"};
    for (int k = 0; k < 2; ++k) {
      const auto it = vertex_of.find(link[keys[k]].dump());
      HALOGEN_USER_CHECK(it != vertex_of.end(), "%s/\"%s\": %s is no node's \"bus_stop\"", where.c_str(),
                         keys[k], link[keys[k]].dump().substr(0, 40).c_str());
      ends[k] = it->second;
    }
    edges.src.push_back(ends[0]);
    edges.dst.push_back(ends[1]);
    HALOGEN_USER_CHECK(link.contains("weight") == weighted,
                       "%s: \"weight\" must be given on every link or on none (\"links\"[0] %s one)",
                       where.c_str(), weighted ? "has" : "has no");
    if (weighted)
      edges.weight.push_back(static_cast<float>(number_at(link["weight"], where + "/\"weight\": ")));
  }
  g.adjacency = graph::build_csr(n, std::move(edges), build_options(options));
  HALOGEN_USER_CHECK(g.adjacency.nnz() > 0,
                     "%s: \"links\": only self-loops, so every snapshot would have no edges", path.c_str());
  g.snapshots.assign(static_cast<size_t>(steps), g.adjacency);
  return g;
}

graph::Graph convert_tennis(const json& doc, const ConvertOptions& options) {
  const std::string& path = options.input;
  const int64_t periods = integer_at(doc["time_periods"], path + ": \"time_periods\": ");
  HALOGEN_USER_CHECK(periods >= 1, "%s: \"time_periods\" is %lld: expected at least 1", path.c_str(),
                     static_cast<long long>(periods));
  graph::Graph g;
  g.name = graph_name(options);
  g.directed = options.directed;
  g.target_steps = periods;
  g.snapshots.resize(static_cast<size_t>(periods));
  int64_t n = -1, stored = 0;
  for (int64_t t = 0; t < periods; ++t) {
    const std::string key = std::to_string(t);
    const std::string where = strformat("%s: \"%s\"", path.c_str(), key.c_str());
    HALOGEN_USER_CHECK(doc.contains(key) && doc[key].is_object(),
                       "%s: missing or not an object (time_periods is %lld: one object per period 0..%lld)",
                       where.c_str(), static_cast<long long>(periods), static_cast<long long>(periods - 1));
    const json& period = doc[key];
    HALOGEN_USER_CHECK(period.contains("y") && period["y"].is_array() && !period["y"].empty(),
                       "%s/\"y\": missing or not a non-empty list (one value per node)", where.c_str());
    const json& y = period["y"];
    if (n < 0) {
      n = static_cast<int64_t>(y.size());
      g.num_nodes = n;
      g.targets.resize(static_cast<size_t>(periods * n));
    }
    HALOGEN_USER_CHECK(static_cast<int64_t>(y.size()) == n, "%s/\"y\": %zu values, but \"0\"/\"y\" has %lld",
                       where.c_str(), y.size(), static_cast<long long>(n));
    for (int64_t v = 0; v < n; ++v)
      g.targets[t * n + v] = static_cast<float>(
          number_at(y[v], strformat("%s/\"y\"[%lld]: ", where.c_str(), static_cast<long long>(v))));
    HALOGEN_USER_CHECK(period.contains("edges") && period["edges"].is_array(),
                       "%s/\"edges\": missing or not a list", where.c_str());
    const json& list = period["edges"];
    const bool weighted = period.contains("weights");
    if (weighted)
      HALOGEN_USER_CHECK(period["weights"].is_array() && period["weights"].size() == list.size(),
                         "%s/\"weights\": expected a list of %zu numbers (one per edge)", where.c_str(),
                         list.size());
    graph::EdgeList edges;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = strformat("%s/\"edges\"[%zu]: ", where.c_str(), i);
      const json& pair = list[i];
      HALOGEN_USER_CHECK(pair.is_array() && pair.size() == 2, "%sexpected [source, target]", at.c_str());
      const int64_t src = integer_at(pair[0], at), dst = integer_at(pair[1], at);
      for (int64_t id : {src, dst})
        HALOGEN_USER_CHECK(id >= 0 && id < n, "%snode %lld out of range [0, %lld)", at.c_str(),
                           static_cast<long long>(id), static_cast<long long>(n));
      edges.src.push_back(src);
      edges.dst.push_back(dst);
      if (weighted)
        edges.weight.push_back(static_cast<float>(
            number_at(period["weights"][i], strformat("%s/\"weights\"[%zu]: ", where.c_str(), i))));
    }
    g.snapshots[t] = graph::build_csr(n, std::move(edges), build_options(options));
    stored += g.snapshots[t].nnz();
  }
  HALOGEN_USER_CHECK(stored > 0,
                     "%s: no period has an edge (self-loops aside), so every snapshot would be empty",
                     path.c_str());
  g.adjacency = snapshot_union(n, g.snapshots);
  return g;
}

}  // namespace halogen::io::pgt
