// PyTorch-Geometric-Temporal JSON with one edge set per period (england_covid.json) -> dynamic graph.
// Layout (torch_geometric_temporal/dataset/encovid.py):
//   "time_periods": T
//   "edge_mapping": {"edge_index": {"0": [[src, dst], ...], ..., "T-1": [...]},
//                    "edge_weight": {"0": [w, ...], ...}}      (edge_weight optional here)
//   "y": T rows of N values (new cases per region: the regression target)
//   "node_ids": {name: id}                                      (optional; when present N = its size)
// Snapshot t is period t's edge list (self-loops dropped, symmetrised unless --directed, a duplicated pair
// keeps the larger weight); /csr is the union; targets = y (standardised per node by convert_pgt_json
// unless --preprocess none).
#include <filesystem>
#include <string>
#include <utility>

#include "core/error.h"
#include "graph/build.h"
#include "io/pgt_json.h"
#include "io/temporal.h"

namespace halogen::io::pgt {

namespace {

using nlohmann::json;

// The object at edge_mapping[key]: exactly the keys "0".."T-1" (decimal, no leading zeros), each a list.
const json& period_object(const json& mapping, const char* key, int64_t periods, const std::string& path) {
  HALOGEN_USER_CHECK(mapping.contains(key) && mapping[key].is_object(),
                     "%s: \"edge_mapping\"/\"%s\": missing or not an object {period: list}", path.c_str(),
                     key);
  const json& object = mapping[key];
  for (auto it = object.begin(); it != object.end(); ++it) {
    const std::string& name = it.key();
    bool canonical = !name.empty() && name.size() <= 18 && (name == "0" || name[0] != '0');
    for (char c : name) canonical = canonical && c >= '0' && c <= '9';
    HALOGEN_USER_CHECK(canonical && std::stoll(name) < periods,
                       "%s: \"edge_mapping\"/\"%s\"/\"%s\": not a period in [0, %lld) (time_periods %lld)",
                       path.c_str(), key, name.c_str(), static_cast<long long>(periods),
                       static_cast<long long>(periods));
    HALOGEN_USER_CHECK(it.value().is_array(), "%s: \"edge_mapping\"/\"%s\"/\"%s\": expected a list",
                       path.c_str(), key, name.c_str());
  }
  for (int64_t t = 0; t < periods; ++t) {
    HALOGEN_USER_CHECK(
        object.contains(std::to_string(t)),
        "%s: \"edge_mapping\"/\"%s\": no list for period \"%lld\" (one is needed for every period "
        "0..%lld)",
        path.c_str(), key, static_cast<long long>(t), static_cast<long long>(periods - 1));
  }
  return object;
}

}  // namespace

graph::Graph convert_periods(const json& doc, const ConvertOptions& options) {
  const std::string& path = options.input;
  HALOGEN_USER_CHECK(
      doc.contains("y") && doc["y"].is_array() && !doc["y"].empty(),
      "%s: \"y\" (the node series, one row of N values per period) is missing or not a non-empty "
      "list",
      path.c_str());
  const json& series = doc["y"];
  const int64_t periods = static_cast<int64_t>(series.size());
  if (doc.contains("time_periods")) {
    const int64_t declared = integer_at(doc["time_periods"], path + ": \"time_periods\": ");
    HALOGEN_USER_CHECK(declared == periods,
                       "%s: \"time_periods\" is %lld, but \"y\" has %lld rows (one per period)", path.c_str(),
                       static_cast<long long>(declared), static_cast<long long>(periods));
  }

  graph::Graph g;
  g.name = options.name.empty() ? std::filesystem::path(path).stem().string() : options.name;
  g.directed = options.directed;
  g.num_nodes = node_count(doc, series, "y", path);
  const int64_t n = g.num_nodes;
  g.target_steps = periods;
  g.targets = read_series(series, "y", n, path);

  const json& mapping = doc["edge_mapping"];
  HALOGEN_USER_CHECK(mapping.is_object(), "%s: \"edge_mapping\": expected an object with \"edge_index\"",
                     path.c_str());
  const json& edge_index = period_object(mapping, "edge_index", periods, path);
  const bool weighted = mapping.contains("edge_weight");
  const json* edge_weight = weighted ? &period_object(mapping, "edge_weight", periods, path) : nullptr;

  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  build.drop_self_loops = true;
  g.snapshots.resize(static_cast<size_t>(periods));
  int64_t stored = 0;
  for (int64_t t = 0; t < periods; ++t) {
    const std::string period = std::to_string(t);
    const json& list = edge_index[period];
    if (weighted) {
      const json& weights = (*edge_weight)[period];
      HALOGEN_USER_CHECK(weights.size() == list.size(),
                         "%s: \"edge_mapping\"/\"edge_weight\"/\"%s\": expected %zu numbers (one per edge of "
                         "\"edge_index\"/\"%s\"), found %zu",
                         path.c_str(), period.c_str(), list.size(), period.c_str(), weights.size());
    }
    graph::EdgeList edges;
    edges.src.reserve(list.size());
    edges.dst.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string where =
          strformat("%s: \"edge_mapping\"/\"edge_index\"/\"%s\"[%zu]: ", path.c_str(), period.c_str(), i);
      const json& pair = list[i];
      HALOGEN_USER_CHECK(pair.is_array() && pair.size() == 2, "%sexpected [source, target]", where.c_str());
      const int64_t src = integer_at(pair[0], where), dst = integer_at(pair[1], where);
      for (int64_t id : {src, dst}) {
        HALOGEN_USER_CHECK(id >= 0 && id < n, "%snode %lld out of range [0, %lld)", where.c_str(),
                           static_cast<long long>(id), static_cast<long long>(n));
      }
      edges.src.push_back(src);
      edges.dst.push_back(dst);
      if (weighted) {
        edges.weight.push_back(static_cast<float>(number_at(
            (*edge_weight)[period][i], strformat("%s: \"edge_mapping\"/\"edge_weight\"/\"%s\"[%zu]: ",
                                                 path.c_str(), period.c_str(), i))));
      }
    }
    g.snapshots[t] = graph::build_csr(n, std::move(edges), build);
    stored += g.snapshots[t].nnz();
  }
  HALOGEN_USER_CHECK(
      stored > 0,
      "%s: \"edge_mapping\"/\"edge_index\": no period has an edge (self-loops aside), so every "
      "snapshot would be empty",
      path.c_str());
  g.adjacency = snapshot_union(n, g.snapshots);
  return g;
}

}  // namespace halogen::io::pgt
