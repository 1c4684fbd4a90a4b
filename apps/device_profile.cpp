#include "apps/device_profile.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/json_file.h"
#include "core/error.h"
#include "core/format.h"
#include "io/atomic_file.h"

namespace halogen::app {
namespace {

using nlohmann::json;

const json& member(const json& object, const char* key, const std::string& where) {
  HALOGEN_USER_CHECK(object.is_object() && object.contains(key), "%s: missing field \"%s\"", where.c_str(),
                     key);
  return object.at(key);
}

double positive(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  HALOGEN_USER_CHECK(value.is_number() && value.get<double>() > 0,
                     "%s: field \"%s\" must be a positive number", where.c_str(), key);
  return value.get<double>();
}

}  // namespace

train::DeviceProfile read_device_profile(const std::string& path) {
  const json doc = read_json_document(path, "device profile", "halogen.device_profile");
  train::DeviceProfile profile;
  profile.name = doc.value("name", path);
  profile.kind = doc.value("kind", "cpu");
  HALOGEN_USER_CHECK(profile.kind == "cpu" || profile.kind == "cuda",
                     "%s: field \"kind\" must be cpu or cuda", path.c_str());
  profile.calibrated = doc.value("calibrated", false);
  profile.source = doc.value("source", "");
  profile.memory_bytes = doc.value("memory_bytes", int64_t{0});
  profile.cache_bytes = doc.value("cache_bytes", int64_t{0});
  profile.cache_shared = doc.value("cache_shared", profile.kind == "cpu");
  HALOGEN_USER_CHECK(profile.cache_bytes >= 0, "%s: field \"cache_bytes\" must be >= 0", path.c_str());
  if (doc.contains("link")) {
    const json& link = doc.at("link");
    const std::string where = path + ": link";
    profile.link_gbs = positive(link, "gbs", where);
    profile.link_latency_us = member(link, "latency_us", where).get<double>();
    profile.overlap = link.value("overlap", true);
    if (link.contains("exchange_gbs")) profile.exchange_gbs = positive(link, "exchange_gbs", where);
    const json share = link.value("overlap_share", json(1.0));
    HALOGEN_USER_CHECK(share.is_number() && share.get<double>() >= 0.0 && share.get<double>() <= 1.0,
                       "%s: field \"overlap_share\" must be a number in [0, 1]", where.c_str());
    profile.overlap_share = share.get<double>();
  }
  if (doc.contains("inter_node_link")) {
    const json& link = doc.at("inter_node_link");
    const std::string where = path + ": inter_node_link";
    profile.inter_link_gbs = positive(link, "gbs", where);
    profile.inter_link_latency_us = member(link, "latency_us", where).get<double>();
    profile.ranks_per_node = static_cast<int>(positive(link, "ranks_per_node", where));
  }
  const json& rates = member(doc, "rates", path);
  HALOGEN_USER_CHECK(rates.is_array() && !rates.empty(), "%s: \"rates\" must be a non-empty array",
                     path.c_str());
  for (size_t i = 0; i < rates.size(); ++i) {
    const std::string where = strformat("%s: rates[%zu]", path.c_str(), i);
    train::ComputeRates r;
    r.threads = static_cast<int>(positive(rates[i], "threads", where));
    r.stream_gbs = positive(rates[i], "stream_gbs", where);
    r.gemm_gflops = positive(rates[i], "gemm_gflops", where);
    r.dropout_gelems = positive(rates[i], "dropout_gelems", where);
    const json& spmm = member(rates[i], "spmm", where);
    const json& widths = member(spmm, "widths", where + ": spmm");
    const json& gbs = member(spmm, "gbs", where + ": spmm");
    HALOGEN_USER_CHECK(widths.is_array() && !widths.empty(), "%s: spmm: \"widths\" must be a non-empty array",
                       where.c_str());
    for (size_t k = 0; k < widths.size(); ++k) {
      HALOGEN_USER_CHECK(widths[k].is_number_integer() && widths[k].get<int64_t>() > 0 &&
                             (k == 0 || widths[k].get<int64_t>() > r.spmm_widths.back()),
                         "%s: spmm: widths must be ascending positive integers", where.c_str());
      r.spmm_widths.push_back(widths[k].get<int64_t>());
    }
    // One row of rates per width, or with "rows" (ascending sizes of the dense operand) one row per size.
    std::vector<const json*> rows_of_gbs{&gbs};
    if (spmm.contains("rows")) {
      const json& rows = spmm["rows"];
      HALOGEN_USER_CHECK(rows.is_array() && !rows.empty() && gbs.is_array() && gbs.size() == rows.size(),
                         "%s: spmm: \"rows\" must be a non-empty array with one array of \"gbs\" per entry",
                         where.c_str());
      rows_of_gbs.clear();
      for (size_t j = 0; j < rows.size(); ++j) {
        HALOGEN_USER_CHECK(rows[j].is_number_integer() && rows[j].get<int64_t>() > 0 &&
                               (j == 0 || rows[j].get<int64_t>() > r.spmm_rows.back()),
                           "%s: spmm: rows must be ascending positive integers", where.c_str());
        r.spmm_rows.push_back(rows[j].get<int64_t>());
        rows_of_gbs.push_back(&gbs[j]);
      }
    }
    for (const json* row : rows_of_gbs) {
      HALOGEN_USER_CHECK(row->is_array() && row->size() == widths.size(),
                         "%s: spmm: \"gbs\" must have one rate per width%s", where.c_str(),
                         r.spmm_rows.empty() ? "" : " for each of \"rows\"");
      for (const json& value : *row) {
        HALOGEN_USER_CHECK(value.is_number() && value.get<double>() > 0, "%s: spmm: gbs must be positive",
                           where.c_str());
        r.spmm_gbs.push_back(value.get<double>());
      }
    }
    HALOGEN_USER_CHECK(profile.rates.empty() || r.threads > profile.rates.back().threads,
                       "%s: rates must be in ascending \"threads\"", where.c_str());
    profile.rates.push_back(r);
  }
  return profile;
}

train::DeviceProfile profile_for_ranks(const train::DeviceProfile& profile, int num_ranks) {
  train::DeviceProfile result = profile;
  if (profile.ranks_per_node > 0 && num_ranks > profile.ranks_per_node) {
    result.link_gbs = profile.inter_link_gbs;
    result.exchange_gbs = 0;  // the node's exchange figure does not hold between nodes
    result.link_latency_us = profile.inter_link_latency_us;
  }
  return result;
}

void write_device_profile(const train::DeviceProfile& profile, const std::string& path) {
  json doc = {{"format", "halogen.device_profile"},
              {"format_version", 1},
              {"name", profile.name},
              {"kind", profile.kind},
              {"calibrated", profile.calibrated},
              {"source", profile.source},
              {"memory_bytes", profile.memory_bytes},
              {"cache_bytes", profile.cache_bytes}};
  // Only meaningful with a cache term: a measured profile (cache_bytes 0) would otherwise read as if one were
  // modelled.
  if (profile.cache_bytes > 0) doc["cache_shared"] = profile.cache_shared;
  if (profile.link_gbs > 0)
    doc["link"] = {
        {"gbs", profile.link_gbs}, {"latency_us", profile.link_latency_us}, {"overlap", profile.overlap},
        {"overlap_share", profile.overlap_share}};
  if (profile.exchange_gbs > 0) doc["link"]["exchange_gbs"] = profile.exchange_gbs;
  if (profile.inter_link_gbs > 0)
    doc["inter_node_link"] = {{"gbs", profile.inter_link_gbs},
                              {"latency_us", profile.inter_link_latency_us},
                              {"ranks_per_node", profile.ranks_per_node}};
  json rates = json::array();
  for (const train::ComputeRates& r : profile.rates) {
    json spmm = {{"widths", r.spmm_widths}, {"gbs", r.spmm_gbs}};
    if (!r.spmm_rows.empty()) {
      json per_size = json::array();
      for (size_t j = 0; j < r.spmm_rows.size(); ++j)
        per_size.push_back(std::vector<double>(r.spmm_gbs.begin() + j * r.spmm_widths.size(),
                                               r.spmm_gbs.begin() + (j + 1) * r.spmm_widths.size()));
      spmm = {{"widths", r.spmm_widths}, {"rows", r.spmm_rows}, {"gbs", per_size}};
    }
    rates.push_back({{"threads", r.threads},
                     {"stream_gbs", r.stream_gbs},
                     {"gemm_gflops", r.gemm_gflops},
                     {"dropout_gelems", r.dropout_gelems},
                     {"spmm", spmm}});
  }
  doc["rates"] = rates;
  io::write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary);
    out << doc.dump(2) << "\n";
    HALOGEN_USER_CHECK(out.good(), "%s: cannot write the device profile", path.c_str());
  });
}

}  // namespace halogen::app
