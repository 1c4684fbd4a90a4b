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

// The per-period layout (England COVID): doc has "edge_mapping". See convert_pgt_json in io/temporal.h.
graph::Graph convert_periods(const nlohmann::json& doc, const ConvertOptions& options);

// montevideo_bus.json ("nodes" with "bus_stop"/"y", "links" with "source"/"target"/"weight") and
// twitter_tennis_*.json ("time_periods" and one object "0".."T-1" per period with "edges"/"weights"/"y"); the
// layouts are described in convert_pgt_layouts.cpp.
graph::Graph convert_montevideo(const nlohmann::json& doc, const ConvertOptions& options);
graph::Graph convert_tennis(const nlohmann::json& doc, const ConvertOptions& options);

}  // namespace halogen::io::pgt
