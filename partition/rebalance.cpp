#include "partition/rebalance.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/format.h"
#include "core/log.h"

namespace halogen::partition {

BalanceWeights balance_weights(const graph::Graph& graph, Balance balance) {
  const int64_t n = graph.num_nodes;
  const graph::Csr& adj = graph.adjacency;
  const bool has_train = !graph.train.empty();
  BalanceWeights w;
  switch (balance) {
    case Balance::vertices:
      w.names = {"vertices"};
      break;
    case Balance::edges:
      w.names = {"1+degree"};
      break;
    case Balance::train:
      w.names =
          has_train ? std::vector<std::string>{"1+degree", "train"} : std::vector<std::string>{"1+degree"};
      break;
    case Balance::all:
      w.names = {"vertices"};
      if (adj.nnz() > 0) w.names.push_back("edges");
      if (has_train) w.names.push_back("train");
      break;
  }
  w.ncon = static_cast<int32_t>(w.names.size());
  const int32_t ncon = w.ncon;
  w.weight.assign(static_cast<size_t>(n) * ncon, 0);
  for (int32_t c = 0; c < ncon; ++c) {
    const std::string& name = w.names[c];
    if (name == "vertices") {
      for (int64_t v = 0; v < n; ++v) w.weight[v * ncon + c] = 1;
    } else if (name == "edges") {
      for (int64_t v = 0; v < n; ++v) w.weight[v * ncon + c] = adj.degree(v);
    } else if (name == "1+degree") {
      for (int64_t v = 0; v < n; ++v) w.weight[v * ncon + c] = 1 + adj.degree(v);
    } else {
      for (int64_t v : graph.train) w.weight[v * ncon + c] = 1;
    }
  }
  return w;
}

std::vector<double> part_fractions(const AssignOptions& options) {
  std::vector<double> fractions(options.num_parts, 1.0);
  if (!options.part_weights.empty()) fractions = options.part_weights;
  const double total = std::accumulate(fractions.begin(), fractions.end(), 0.0);
  for (double& f : fractions) f /= total;
  return fractions;
}

namespace {

// Loads of every part per constraint, relative to the part's target, and the penalty rebalance minimises:
// sum over constraints of max(0, relative load - bound)^2.
class PartLoads {
 public:
  PartLoads(const BalanceWeights& weights, const std::vector<double>& fractions,
            const std::vector<int32_t>& part_of, double bound)
      : parts_(static_cast<int32_t>(fractions.size())), ncon_(weights.ncon), bound_(bound) {
    const int64_t n = static_cast<int64_t>(part_of.size());
    HALOGEN_ASSERT(static_cast<int64_t>(weights.weight.size()) == n * ncon_,
                   "weights hold %zu entries for %lld vertices x %d constraints", weights.weight.size(),
                   static_cast<long long>(n), ncon_);
    load_.assign(static_cast<size_t>(parts_) * ncon_, 0);
    std::vector<int64_t> total(ncon_, 0);
    for (int64_t v = 0; v < n; ++v) {
      HALOGEN_ASSERT(part_of[v] >= 0 && part_of[v] < parts_, "vertex %lld in part %d of %d",
                     static_cast<long long>(v), part_of[v], parts_);
      for (int32_t c = 0; c < ncon_; ++c) {
        load_[part_of[v] * ncon_ + c] += weights.weight[v * ncon_ + c];
        total[c] += weights.weight[v * ncon_ + c];
      }
    }
    inverse_target_.assign(static_cast<size_t>(parts_) * ncon_, 0.0);  // 0: constraint with total 0, skipped
    for (int32_t p = 0; p < parts_; ++p)
      for (int32_t c = 0; c < ncon_; ++c)
        if (total[c] > 0)
          inverse_target_[p * ncon_ + c] = 1.0 / (fractions[p] * static_cast<double>(total[c]));
  }

  double relative(int32_t p, int32_t c) const {
    return static_cast<double>(load_[p * ncon_ + c]) * inverse_target_[p * ncon_ + c];
  }
  double max_relative(int32_t p) const {
    double worst = 0;
    for (int32_t c = 0; c < ncon_; ++c) worst = std::max(worst, relative(p, c));
    return worst;
  }
  double max_relative() const {
    double worst = 0;
    for (int32_t p = 0; p < parts_; ++p) worst = std::max(worst, max_relative(p));
    return worst;
  }
  // Penalty of part p with `sign` x w (ncon weights) added to its load; w may be null (sign ignored).
  double penalty(int32_t p, const int64_t* w, int sign) const {
    double sum = 0;
    for (int32_t c = 0; c < ncon_; ++c) {
      const int64_t load = load_[p * ncon_ + c] + (w ? sign * w[c] : 0);
      const double excess = static_cast<double>(load) * inverse_target_[p * ncon_ + c] - bound_;
      if (excess > 0) sum += excess * excess;
    }
    return sum;
  }
  // max_relative(p) with w added to part p's load.
  double max_relative_with(int32_t p, const int64_t* w) const {
    double worst = 0;
    for (int32_t c = 0; c < ncon_; ++c)
      worst =
          std::max(worst, static_cast<double>(load_[p * ncon_ + c] + w[c]) * inverse_target_[p * ncon_ + c]);
    return worst;
  }
  // Change of the total penalty when a vertex of weights w moves from part `from` to part `to`.
  double move_delta(int32_t from, int32_t to, const int64_t* w) const {
    return penalty(from, w, -1) - penalty(from, nullptr, 0) + penalty(to, w, +1) - penalty(to, nullptr, 0);
  }
  void move(int32_t from, int32_t to, const int64_t* w) {
    for (int32_t c = 0; c < ncon_; ++c) {
      load_[from * ncon_ + c] -= w[c];
      load_[to * ncon_ + c] += w[c];
    }
  }
  // Whether removing w from part p lowers its load in a constraint where p is above the bound.
  bool relieves(int32_t p, const int64_t* w) const {
    for (int32_t c = 0; c < ncon_; ++c)
      if (w[c] > 0 && relative(p, c) > bound_) return true;
    return false;
  }

 private:
  int32_t parts_, ncon_;
  double bound_;
  std::vector<int64_t> load_;           // (P, ncon)
  std::vector<double> inverse_target_;  // (P, ncon) 1 / (fraction[p] * total[c])
};

// A move must lower the penalty by more than rounding noise (a 1-vertex move on 10^8 changes it by ~1e-9).
constexpr double kMinDecrease = 1e-15;

struct Move {
  int64_t vertex;
  int32_t to;
  int64_t gain;  // cut entries removed (negative: added)
  double delta;  // penalty change when chosen (< 0)
};

// Moves that remove cut first (most first), then by cut added per unit of penalty removed; ties by vertex id.
bool move_before(const Move& a, const Move& b) {
  const bool a_free = a.gain >= 0, b_free = b.gain >= 0;
  if (a_free != b_free) return a_free;
  if (a_free) return a.gain != b.gain ? a.gain > b.gain : a.vertex < b.vertex;
  const double a_cost = static_cast<double>(-a.gain) / -a.delta,
               b_cost = static_cast<double>(-b.gain) / -b.delta;
  return a_cost != b_cost ? a_cost < b_cost : a.vertex < b.vertex;
}

}  // namespace

double max_relative_load(const BalanceWeights& weights, const std::vector<double>& fractions,
                         const std::vector<int32_t>& part_of) {
  return PartLoads(weights, fractions, part_of, 1.0).max_relative();
}

RebalanceReport rebalance_loads(const graph::Csr& adjacency, const BalanceWeights& weights,
                                const std::vector<double>& fractions, double imbalance,
                                std::vector<int32_t>& part_of) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  const int32_t parts = static_cast<int32_t>(fractions.size()), ncon = weights.ncon;
  HALOGEN_ASSERT(static_cast<int64_t>(adjacency.indptr.size()) == n + 1,
                 "adjacency has %zu row offsets for %lld vertices", adjacency.indptr.size(),
                 static_cast<long long>(n));
  PartLoads loads(weights, fractions, part_of, imbalance);
  RebalanceReport report;
  report.max_load_before = report.max_load_after = loads.max_relative();
  if (parts <= 1 || report.max_load_before <= imbalance) return report;

  std::vector<char> overloaded(parts, 0);
  std::vector<int64_t> connection(parts, 0);
  std::vector<int32_t> touched;
  std::vector<Move> moves;
  // A round usually brings every part within the bound; later rounds mend what stale gains and shared
  // destinations left. 64 bounds the time on graphs where no assignment reaches the bound.
  constexpr int32_t kMaxRounds = 64;
  for (int32_t round = 0; round < kMaxRounds; ++round) {
    // Every overloaded part gives; the least loaded part is every vertex's fallback destination.
    int32_t lightest = 0, num_overloaded = 0;
    for (int32_t p = 0; p < parts; ++p) {
      overloaded[p] = loads.max_relative(p) > imbalance;
      num_overloaded += overloaded[p];
      if (loads.max_relative(p) < loads.max_relative(lightest)) lightest = p;
    }
    if (num_overloaded == 0) break;
    // No destination may end above the largest relative load at the round's start, so the maximum never
    // grows.
    const double cap = loads.max_relative();

    moves.clear();
    for (int64_t v = 0; v < n; ++v) {
      const int32_t from = part_of[v];
      if (!overloaded[from]) continue;
      const int64_t* w = &weights.weight[v * ncon];
      if (!loads.relieves(from, w)) continue;
      touched.clear();
      for (int64_t e = adjacency.indptr[v]; e < adjacency.indptr[v + 1]; ++e) {
        const int64_t x = adjacency.indices[e];
        if (x == v) continue;
        const int32_t q = part_of[x];
        if (connection[q] == 0) touched.push_back(q);
        ++connection[q];
      }
      Move best{v, -1, 0, 0};
      auto consider = [&](int32_t q) {
        const double delta = loads.move_delta(from, q, w);
        const int64_t gain = connection[q] - connection[from];
        if (delta < -kMinDecrease && loads.max_relative_with(q, w) <= cap &&
            (best.to < 0 || gain > best.gain || (gain == best.gain && delta < best.delta)))
          best = Move{v, q, gain, delta};
      };
      for (int32_t q : touched)
        if (q != from) consider(q);
      if (lightest != from && connection[lightest] == 0) consider(lightest);
      for (int32_t q : touched) connection[q] = 0;
      if (best.to >= 0) moves.push_back(best);
    }
    std::sort(moves.begin(), moves.end(), move_before);

    int64_t applied = 0;
    for (const Move& m : moves) {
      const int32_t from = part_of[m.vertex];
      if (loads.max_relative(from) <= imbalance) continue;  // already relieved by earlier moves
      const int64_t* w = &weights.weight[m.vertex * ncon];
      // Loads changed since it was chosen: re-check both conditions.
      if (loads.move_delta(from, m.to, w) >= -kMinDecrease || loads.max_relative_with(m.to, w) > cap)
        continue;
      loads.move(from, m.to, w);
      part_of[m.vertex] = m.to;
      ++applied;
    }
    report.moved += applied;
    if (applied == 0) break;  // no move helps any more
  }
  report.max_load_after = loads.max_relative();
  return report;
}

RebalanceReport rebalance(const graph::Graph& graph, const AssignOptions& options,
                          std::vector<int32_t>& part_of) {
  const BalanceWeights weights = balance_weights(graph, options.balance);
  const RebalanceReport report =
      rebalance_loads(graph.adjacency, weights, part_fractions(options), options.imbalance, part_of);
  if (report.moved > 0) {
    std::string names;
    for (const std::string& name : weights.names) names += (names.empty() ? "" : ", ") + name;
    log::info(strformat("rebalance (%s): %lld moves, largest part load / target %.3f -> %.3f", names.c_str(),
                        static_cast<long long>(report.moved), report.max_load_before, report.max_load_after));
  }
  return report;
}

}  // namespace halogen::partition
