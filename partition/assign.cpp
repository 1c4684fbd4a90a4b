#include "partition/assign.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "core/rng.h"
#include "partition/rebalance.h"

namespace halogen::partition {

Method parse_method(const std::string& text) {
  if (text == "metis") return Method::metis;
  if (text == "random") return Method::random;
  if (text == "contiguous") return Method::contiguous;
  if (text == "ptscotch") return Method::ptscotch;
  throw UserError("--method: unknown partitioning method \"" + text +
                  "\" (expected metis, ptscotch, random or contiguous)");
}

Objective parse_objective(const std::string& text) {
  if (text == "cut") return Objective::cut;
  if (text == "vol" || text == "volume") return Objective::volume;
  throw UserError("--objective: unknown objective \"" + text + "\" (expected cut or vol)");
}

Balance parse_balance(const std::string& text) {
  if (text == "vertices") return Balance::vertices;
  if (text == "edges") return Balance::edges;
  if (text == "train") return Balance::train;
  if (text == "all") return Balance::all;
  throw UserError("--balance: unknown balance \"" + text + "\" (expected all, vertices, edges or train)");
}

std::vector<double> parse_part_weights(const std::string& text, int32_t num_parts) {
  std::vector<double> weights;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || end == item.c_str() || *end != '\0' || !std::isfinite(value) || value <= 0)
      throw UserError("--part-weights: \"" + item + "\" is not a positive number");
    weights.push_back(value);
  }
  if (static_cast<int32_t>(weights.size()) != num_parts)
    throw UserError("--part-weights: " + std::to_string(weights.size()) + " weights given for " +
                    std::to_string(num_parts) + " parts");
  return weights;
}

const char* method_name(Method method) {
  switch (method) {
    case Method::metis:
      return "metis";
    case Method::random:
      return "random";
    case Method::contiguous:
      return "contiguous";
    case Method::ptscotch:
      return "ptscotch";
  }
  return "?";
}
const char* objective_name(Objective objective) {
  return objective == Objective::cut ? "cut" : "vol";
}
const char* balance_name(Balance balance) {
  switch (balance) {
    case Balance::vertices:
      return "vertices";
    case Balance::edges:
      return "edges";
    case Balance::train:
      return "train";
    case Balance::all:
      return "all";
  }
  return "?";
}

void validate_options(const graph::Graph& graph, const AssignOptions& options) {
  HALOGEN_USER_CHECK(options.num_parts >= 1, "--parts: %d parts requested; at least 1 is needed",
                     options.num_parts);
  HALOGEN_USER_CHECK(
      options.num_parts <= graph.num_nodes,
      "--parts: %d parts requested, but the graph has only %lld vertices (each part needs one)",
      options.num_parts, static_cast<long long>(graph.num_nodes));
  HALOGEN_USER_CHECK(options.imbalance >= 1.0 && options.imbalance <= 3.0,
                     "--imbalance: %g is outside [1, 3] (it is the allowed max/mean load, e.g. 1.03)",
                     options.imbalance);
  HALOGEN_USER_CHECK(
      options.part_weights.empty() || static_cast<int32_t>(options.part_weights.size()) == options.num_parts,
      "--part-weights: %zu weights given for %d parts", options.part_weights.size(), options.num_parts);
  HALOGEN_USER_CHECK(options.refine_iterations >= 1 && options.refine_iterations <= 100,
                     "--refine-iterations: %d is outside [1, 100]", options.refine_iterations);
  for (double w : options.part_weights)
    HALOGEN_USER_CHECK(std::isfinite(w) && w > 0, "--part-weights: %g is not a positive number", w);
}

namespace {

// Per-vertex weight balanced by the baselines (`all`: vertex count, rebalance does the rest).
std::vector<double> baseline_weights(const graph::Graph& graph, Balance balance) {
  const int64_t n = graph.num_nodes;
  std::vector<double> weight(n, 1.0);
  if (balance == Balance::edges) {
    for (int64_t v = 0; v < n; ++v) weight[v] = 1.0 + static_cast<double>(graph.adjacency.degree(v));
  } else if (balance == Balance::train) {
    if (graph.train.empty()) {
      log::warn("--balance train: the graph has no training vertices; balancing vertices instead");
      return weight;
    }
    std::fill(weight.begin(), weight.end(), 0.0);
    for (int64_t v : graph.train) weight[v] = 1.0;
  }
  return weight;
}

// Cuts `order` into consecutive runs whose weights follow `fractions`: a vertex goes to the part whose
// target interval holds the midpoint of its weight on the running total.
std::vector<int32_t> split_in_order(const std::vector<int64_t>& order, const std::vector<double>& weight,
                                    const std::vector<double>& fractions) {
  const int32_t parts = static_cast<int32_t>(fractions.size());
  double total = 0;
  for (double w : weight) total += w;
  std::vector<double> boundary(parts);  // boundary[k] = end of part k's interval
  double running = 0;
  for (int32_t k = 0; k < parts; ++k) boundary[k] = total * (running += fractions[k]);
  boundary[parts - 1] = total;
  std::vector<int32_t> part_of(order.size());
  double prefix = 0;
  int32_t part = 0;
  for (int64_t v : order) {
    const double midpoint = prefix + 0.5 * weight[v];
    while (part < parts - 1 && midpoint >= boundary[part]) ++part;
    part_of[v] = part;
    prefix += weight[v];
  }
  return part_of;
}

}  // namespace

std::vector<int32_t> assign_contiguous(const graph::Graph& graph, const AssignOptions& options) {
  validate_options(graph, options);
  std::vector<int64_t> order(graph.num_nodes);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int32_t> part_of =
      split_in_order(order, baseline_weights(graph, options.balance), part_fractions(options));
  if (options.balance == Balance::all) rebalance(graph, options, part_of);
  return part_of;
}

std::vector<int32_t> assign_random(const graph::Graph& graph, const AssignOptions& options) {
  validate_options(graph, options);
  // A seeded random permutation: sort vertices by a counter-based random key (ties broken by id).
  constexpr uint64_t kStream = 0x7061727469746e00ull;  // "partitn"
  const int64_t n = graph.num_nodes;
  std::vector<std::pair<uint64_t, int64_t>> keyed(n);
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v)
    keyed[v] = {rng::uniform_u64(options.seed, kStream, static_cast<uint64_t>(v)), v};
  std::sort(keyed.begin(), keyed.end());
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i) order[i] = keyed[i].second;
  keyed = {};
  std::vector<int32_t> part_of =
      split_in_order(order, baseline_weights(graph, options.balance), part_fractions(options));
  if (options.balance == Balance::all) rebalance(graph, options, part_of);
  return part_of;
}

std::vector<int32_t> assign_parts(const graph::Graph& graph, const AssignOptions& options) {
  validate_options(graph, options);
  switch (options.method) {
    case Method::metis:
      return assign_metis(graph, options);
    case Method::random:
      return assign_random(graph, options);
    case Method::contiguous:
      return assign_contiguous(graph, options);
    case Method::ptscotch:
      throw UserError("--method ptscotch partitions a graph file (`halogen partition GRAPH.h5 --method ptscotch`, "
                      "under mpirun for several processes), not a graph in memory");
  }
  HALOGEN_ASSERT(false, "unknown method");
  return {};
}

}  // namespace halogen::partition
