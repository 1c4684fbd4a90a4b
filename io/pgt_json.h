#pragma once
// Internal to io/: pieces shared by the PyTorch-Geometric-Temporal JSON layouts (convert_pgt.cpp: one
// static edge set; convert_pgt_periods.cpp: one edge set per period). Every error names the file, the JSON
// key path and the index.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "io/convert.h"

namespace halogen::io::pgt {

// `value` as an integer / a finite number; UserError "<where>not an integer (...)" otherwise. `where` ends
// with ": ".
int64_t integer_at(const nlohmann::json& value, const std::string& where);
double number_at(const nlohmann::json& value, const std::string& where);

// The node count: |doc["node_ids"]| when present, else the width of series[0]. `series_key` names `series`.
int64_t node_count(const nlohmann::json& doc, const nlohmann::json& series, const std::string& series_key,
                   const std::string& path);

// `series` (T rows of exactly n finite numbers) as float [T, n], row-major.
std::vector<float> read_series(const nlohmann::json& series, const std::string& series_key, int64_t n,
                               const std::string& path);

// What PyTorch Geometric Temporal's loader of a layout does to the targets before a model sees them (read
// from torch_geometric_temporal/dataset/*.py; docs/dynamic.md, "Preprocessing").
enum class Transform {
  none,                 // the values as given (Chickenpox, PedalMe)
  standardize_eps,      // (y - mean_v) / (std_v + 1e-10) over all T (England COVID, Windmill)
  standardize,          // (y - mean_v) / std_v over all T (Montevideo bus, WikiMaths)
  log1p,                // log(1 + y) (Twitter tennis)
};
struct Loader {
  const char* name = "";  // the PGT class, e.g. "EnglandCovidDatasetLoader"
  Transform transform = Transform::none;
  const char* series_key = "y";  // the JSON key of the series, for messages
};

// Applies `loader`'s transform to g.targets when options.preprocess is "pgt" and records it in
// g.preprocess (name, formula and, per node, offset/scale back to the file's units); "none" records that
// the values are as given. A constant series is stored as 0 with scale 1 (the reference divides by 0 or by
// 1e-10 there). log1p of a value <= -1 is a UserError naming the file and the value.
void preprocess(graph::Graph& g, const Loader& loader, const ConvertOptions& options);

// The per-period layout (England COVID): doc has "edge_mapping". See convert_pgt_json in io/temporal.h.
graph::Graph convert_periods(const nlohmann::json& doc, const ConvertOptions& options);

// montevideo_bus.json ("nodes" with "bus_stop"/"y", "links" with "source"/"target"/"weight") and
// twitter_tennis_*.json ("time_periods" and one object "0".."T-1" per period with "edges"/"weights"/"y"); the
// layouts are described in convert_pgt_layouts.cpp.
graph::Graph convert_montevideo(const nlohmann::json& doc, const ConvertOptions& options);
graph::Graph convert_tennis(const nlohmann::json& doc, const ConvertOptions& options);

// wikivital_mathematics.json: one static edge set ("edges", "weights") and "time_periods" objects "0".."T-1"
// each holding that period's "y" (N values). Described in convert_pgt_layouts.cpp.
graph::Graph convert_wikimaths(const nlohmann::json& doc, const ConvertOptions& options);

}  // namespace halogen::io::pgt
