#include "partition/rebalance.h"

#include <algorithm>
#include <limits>
#include <memory>
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

// Loads of every part per constraint, relative to the part's target, and the penalty rebalance minimises:
// sum over constraints of max(0, relative load - bound)^2.
class PartLoads {
 public:
  PartLoads(const PartLoadTable& table, const std::vector<double>& fractions, double bound)
      : parts_(static_cast<int32_t>(fractions.size())), ncon_(table.ncon), bound_(bound), load_(table.load) {
    HALOGEN_ASSERT(static_cast<int64_t>(load_.size()) == int64_t{parts_} * ncon_ &&
                       static_cast<int32_t>(table.total.size()) == ncon_,
                   "load table of %zu entries for %d parts x %d constraints", load_.size(), parts_, ncon_);
    inverse_target_.assign(static_cast<size_t>(parts_) * ncon_, 0.0);  // 0: constraint with total 0, skipped
    for (int32_t p = 0; p < parts_; ++p)
      for (int32_t c = 0; c < ncon_; ++c)
        if (table.total[c] > 0)
          inverse_target_[p * ncon_ + c] = 1.0 / (fractions[p] * static_cast<double>(table.total[c]));
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
  // Whether part p stays within the bound in every constraint w weighs in when w is added to it.
  bool fits(int32_t p, const int64_t* w) const {
    for (int32_t c = 0; c < ncon_; ++c)
      if (w[c] > 0 && static_cast<double>(load_[p * ncon_ + c] + w[c]) * inverse_target_[p * ncon_ + c] > bound_)
        return false;
    return true;
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

namespace {

// A move must lower the penalty by more than rounding noise (a 1-vertex move on 10^8 changes it by ~1e-9).
constexpr double kMinDecrease = 1e-15;

using Move = RebalanceMove;

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

PartLoadTable part_load_table(const BalanceWeights& weights, const std::vector<int32_t>& part_of, int32_t parts) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  const int32_t ncon = weights.ncon;
  HALOGEN_ASSERT(static_cast<int64_t>(weights.weight.size()) == n * ncon,
                 "weights hold %zu entries for %lld vertices x %d constraints", weights.weight.size(),
                 static_cast<long long>(n), ncon);
  PartLoadTable table;
  table.ncon = ncon;
  table.load.assign(static_cast<size_t>(parts) * ncon, 0);
  table.total.assign(static_cast<size_t>(ncon), 0);
  for (int64_t v = 0; v < n; ++v) {
    HALOGEN_ASSERT(part_of[v] >= 0 && part_of[v] < parts, "vertex %lld in part %d of %d", static_cast<long long>(v),
                   part_of[v], parts);
    for (int32_t c = 0; c < ncon; ++c) {
      table.load[part_of[v] * ncon + c] += weights.weight[v * ncon + c];
      table.total[c] += weights.weight[v * ncon + c];
    }
  }
  return table;
}

double max_relative_load(const PartLoadTable& table, const std::vector<double>& fractions) {
  return PartLoads(table, fractions, 1.0).max_relative();
}

double max_relative_load(const BalanceWeights& weights, const std::vector<double>& fractions,
                         const std::vector<int32_t>& part_of) {
  return max_relative_load(part_load_table(weights, part_of, static_cast<int32_t>(fractions.size())), fractions);
}

RebalanceRound::RebalanceRound(const PartLoadTable& table, const std::vector<double>& fractions, double imbalance)
    : loads_(std::make_unique<PartLoads>(table, fractions, imbalance)), imbalance_(imbalance),
      ncon_(table.ncon), overloaded_(fractions.size(), 0), neighbours_(fractions.size()) {
  HALOGEN_ASSERT(ncon_ <= kMaxBalanceConstraints, "%d balance constraints, at most %d", ncon_,
                 kMaxBalanceConstraints);
  const int32_t parts = static_cast<int32_t>(fractions.size());
  // Every overloaded part gives; the least loaded part is every vertex's fallback destination.
  for (int32_t p = 0; p < parts; ++p) {
    overloaded_[p] = loads_->max_relative(p) > imbalance;
    any_overloaded_ = any_overloaded_ || overloaded_[p];
    if (loads_->max_relative(p) < loads_->max_relative(lightest_)) lightest_ = p;
  }
  // No destination may end above the largest relative load at the round's start, so the maximum never grows.
  cap_ = loads_->max_relative();
}

RebalanceRound::~RebalanceRound() = default;

bool RebalanceRound::gives(int32_t from, const int64_t* weight) const {
  return overloaded_[from] && loads_->relieves(from, weight);
}

void RebalanceRound::propose(int64_t vertex, int32_t from, const int64_t* weight, std::vector<RebalanceMove>& out) {
  Move best;
  best.vertex = vertex;
  best.from = from;
  auto consider = [&](int32_t q) {
    const double delta = loads_->move_delta(from, q, weight);
    const int64_t gain = neighbours_.count[q] - neighbours_.count[from];
    if (delta < -kMinDecrease && loads_->max_relative_with(q, weight) <= cap_ &&
        (best.to < 0 || gain > best.gain || (gain == best.gain && delta < best.delta))) {
      best.to = q;
      best.gain = gain;
      best.delta = delta;
    }
  };
  for (int32_t q : neighbours_.touched)
    if (q != from) consider(q);
  if (lightest_ != from && neighbours_.count[lightest_] == 0) consider(lightest_);
  neighbours_.clear();
  if (best.to < 0) return;
  std::copy(weight, weight + ncon_, best.weight.begin());
  out.push_back(best);
}

std::vector<RebalanceMove> RebalanceRound::choose(std::vector<RebalanceMove> moves) {
  std::sort(moves.begin(), moves.end(), move_before);
  std::vector<RebalanceMove> applied;
  for (const Move& m : moves) {
    if (loads_->max_relative(m.from) <= imbalance_) continue;  // already relieved by earlier moves
    const int64_t* w = m.weight.data();
    // Loads changed since it was chosen: re-check both conditions.
    if (loads_->move_delta(m.from, m.to, w) >= -kMinDecrease || loads_->max_relative_with(m.to, w) > cap_) continue;
    loads_->move(m.from, m.to, w);
    applied.push_back(m);
  }
  return applied;
}

namespace {

// One round of a serial pass (rebalance_loads, refine_loads): every vertex of a part that gives proposes, with its
// neighbours' parts; the round chooses; the chosen moves are applied to part_of and the load table and returned.
template <typename Round>
std::vector<Move> apply_round(Round& round, const graph::Csr& adjacency, const BalanceWeights& weights,
                              std::vector<int32_t>& part_of, PartLoadTable& table) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  const int32_t ncon = weights.ncon;
  std::vector<Move> moves;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t* w = &weights.weight[v * ncon];
    if (!round.gives(part_of[v], w)) continue;
    for (int64_t e = adjacency.indptr[v]; e < adjacency.indptr[v + 1]; ++e)
      if (adjacency.indices[e] != v) round.neighbour(part_of[adjacency.indices[e]]);
    round.propose(v, part_of[v], w, moves);
  }
  std::vector<Move> applied = round.choose(std::move(moves));
  for (const Move& m : applied) {
    part_of[m.vertex] = m.to;
    for (int32_t c = 0; c < ncon; ++c) {
      table.load[m.from * ncon + c] -= m.weight[c];
      table.load[m.to * ncon + c] += m.weight[c];
    }
  }
  return applied;
}

}  // namespace

RebalanceReport rebalance_loads(const graph::Csr& adjacency, const BalanceWeights& weights,
                                const std::vector<double>& fractions, double imbalance,
                                std::vector<int32_t>& part_of) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  const int32_t parts = static_cast<int32_t>(fractions.size());
  HALOGEN_ASSERT(static_cast<int64_t>(adjacency.indptr.size()) == n + 1,
                 "adjacency has %zu row offsets for %lld vertices", adjacency.indptr.size(),
                 static_cast<long long>(n));
  PartLoadTable table = part_load_table(weights, part_of, parts);
  RebalanceReport report;
  report.max_load_before = report.max_load_after = max_relative_load(table, fractions);
  if (parts <= 1 || report.max_load_before <= imbalance) return report;

  // A round usually brings every part within the bound; later rounds mend what stale gains and shared
  // destinations left. kMaxRebalanceRounds bounds the time on graphs where no assignment reaches the bound.
  for (int32_t round_number = 0; round_number < kMaxRebalanceRounds; ++round_number) {
    RebalanceRound round(table, fractions, imbalance);
    if (!round.any_overloaded()) break;
    const std::vector<Move> applied = apply_round(round, adjacency, weights, part_of, table);
    report.moved += static_cast<int64_t>(applied.size());
    if (applied.empty()) break;  // no move helps any more
  }
  report.max_load_after = max_relative_load(table, fractions);
  return report;
}

int32_t RefineRound::cycle(int32_t parts) {
  int32_t bits = 1;
  while ((int64_t{1} << bits) < parts) ++bits;
  return 2 * bits;
}

RefineRound::RefineRound(const PartLoadTable& table, const std::vector<double>& fractions, double imbalance,
                         int32_t round_number)
    : loads_(std::make_unique<PartLoads>(table, fractions, imbalance)), ncon_(table.ncon),
      giver_(fractions.size(), 0), neighbours_(fractions.size()) {
  HALOGEN_ASSERT(ncon_ <= kMaxBalanceConstraints, "%d balance constraints, at most %d", ncon_,
                 kMaxBalanceConstraints);
  const int32_t parts = static_cast<int32_t>(fractions.size());
  const int32_t bit = (round_number / 2) % (cycle(parts) / 2), side = round_number % 2;
  for (int32_t p = 0; p < parts; ++p) giver_[p] = ((p >> bit) & 1) == side;
}

RefineRound::~RefineRound() = default;

void RefineRound::propose(int64_t vertex, int32_t from, const int64_t* weight, std::vector<RebalanceMove>& out) {
  Move best;
  best.vertex = vertex;
  best.from = from;
  for (int32_t q : neighbours_.touched) {
    const int64_t gain = neighbours_.count[q] - neighbours_.count[from];
    if (giver_[q] || gain <= 0 || !loads_->fits(q, weight)) continue;
    if (best.to < 0 || gain > best.gain || (gain == best.gain && q < best.to)) {
      best.to = q;
      best.gain = gain;
    }
  }
  neighbours_.clear();
  if (best.to < 0) return;
  std::copy(weight, weight + ncon_, best.weight.begin());
  out.push_back(best);
}

std::vector<RebalanceMove> RefineRound::choose(std::vector<RebalanceMove> moves) {
  std::sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) {
    return a.gain != b.gain ? a.gain > b.gain : a.vertex < b.vertex;
  });
  std::vector<RebalanceMove> applied;
  for (const Move& m : moves) {
    if (!loads_->fits(m.to, m.weight.data())) continue;  // earlier moves filled the destination
    loads_->move(m.from, m.to, m.weight.data());
    applied.push_back(m);
  }
  return applied;
}

RefineReport refine_loads(const graph::Csr& adjacency, const BalanceWeights& weights,
                          const std::vector<double>& fractions, double imbalance, std::vector<int32_t>& part_of) {
  const int64_t n = static_cast<int64_t>(part_of.size());
  const int32_t parts = static_cast<int32_t>(fractions.size());
  HALOGEN_ASSERT(static_cast<int64_t>(adjacency.indptr.size()) == n + 1,
                 "adjacency has %zu row offsets for %lld vertices", adjacency.indptr.size(),
                 static_cast<long long>(n));
  RefineReport report;
  if (parts <= 1) return report;
  PartLoadTable table = part_load_table(weights, part_of, parts);
  int32_t idle = 0;  // rounds in a row without moves
  for (int32_t round_number = 0; round_number < kMaxRefineRounds && idle < RefineRound::cycle(parts);
       ++round_number) {
    RefineRound round(table, fractions, imbalance, round_number);
    const std::vector<Move> applied = apply_round(round, adjacency, weights, part_of, table);
    for (const Move& m : applied) report.gained += m.gain;
    report.moved += static_cast<int64_t>(applied.size());
    ++report.rounds;
    idle = applied.empty() ? idle + 1 : 0;
  }
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
