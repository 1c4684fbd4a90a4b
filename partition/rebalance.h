#pragma once
// Load balance of an assignment and a pass that restores it. What a part's load counts is
// AssignOptions::balance (balance_weights below); the default, Balance::all, counts owned vertices, stored
// edges (adjacency entries of owned rows) and, when the graph has a training split, training vertices, each
// balanced on its own. METIS's multi-constraint partitioning (and any single-weight method, e.g. a random
// split) can leave a part above its bound on power-law graphs, where hubs make one constraint lumpy;
// rebalance() then moves vertices out of overloaded parts. It works on any assignment (any method), so every
// method gets the same guarantee.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "partition/assign.h"

namespace halogen::partition {

// Per-vertex loads, ncon constraints: weight[v * ncon + c] >= 0.
struct BalanceWeights {
  int32_t ncon = 1;
  std::vector<int64_t> weight;  // (N, ncon)
  // (ncon) "vertices", "edges" (stored entries of the row), "1+degree", "train"
  std::vector<std::string> names;
};

// The constraints a Balance counts:
//   vertices: (1);  edges: (1 + degree);  train: (1 + degree, is-training) or (1 + degree) without a split;
//   all:      (1, degree, is-training), the last only when the graph has training vertices; a constraint
//             whose total is 0 (a graph without edges) is left out, as it constrains nothing.
// degree = the vertex's row length in graph.adjacency, i.e. the edges its owner part stores.
BalanceWeights balance_weights(const graph::Graph& graph, Balance balance);

// Target fraction of the total of every constraint per part (options.part_weights normalised; equal when
// empty). (num_parts), summing to 1.
std::vector<double> part_fractions(const AssignOptions& options);

// max over parts p and constraints c of load(p, c) / (fraction[p] * total(c)): 1 is perfect,
// options.imbalance is the bound aimed at. Constraints with total 0 are skipped.
// part_of: (N), each in [0, fractions.size()).
double max_relative_load(const BalanceWeights& weights, const std::vector<double>& fractions,
                         const std::vector<int32_t>& part_of);

struct RebalanceReport {
  int64_t moved = 0;           // moves applied (a vertex may move in more than one round)
  double max_load_before = 1;  // max_relative_load before and after
  double max_load_after = 1;
};

// Moves vertices out of parts whose relative load (as in max_relative_load) exceeds `imbalance` in some
// constraint, until every part is within it or no move helps. Deterministic. Contract:
// - every applied move strictly decreases the sum over parts and constraints of
//   max(0, relative load - imbalance)^2, and never takes its destination above the largest relative load at
//   the start of its round, so max_load_after <= max_load_before and the pass terminates;
// - an assignment already within `imbalance` is returned unchanged (moved = 0);
// - the edge cut is kept low, not minimised: in rounds (at most 64) the overloaded parts' vertices move first
//   when they gain cut (neighbours in the destination part), then by cut lost per unit of penalty removed;
//   a destination is a part the vertex has neighbours in, or the least loaded part.
// No bound holds for every graph: a single vertex heavier than a part's slack (a star's hub) cannot be split.
// On RMAT graphs (scale 12-22 at P = 2 and 4, 12-18 also at P = 8) METIS + rebalance is within 1.03
// (docs/partition.md).
// adjacency: the graph's CSR (N rows), used for cut gains only. part_of: (N), updated in place.
// Built from RebalanceRound below, as the distributed rebalance of --method ptscotch is, so both make the same
// moves from the same assignment.
RebalanceReport rebalance_loads(const graph::Csr& adjacency, const BalanceWeights& weights,
                                const std::vector<double>& fractions, double imbalance,
                                std::vector<int32_t>& part_of);

// ---- The pieces of rebalance_loads, for callers whose vertices are spread over processes -------------------

constexpr int32_t kMaxBalanceConstraints = 3;  // balance_weights gives at most 3
constexpr int32_t kMaxRebalanceRounds = 64;

// Loads of every part per constraint and the constraint totals: (parts x ncon) and (ncon). A distributed
// caller sums the tables of its processes (every entry is a plain sum).
struct PartLoadTable {
  int32_t ncon = 0;
  std::vector<int64_t> load, total;
};
PartLoadTable part_load_table(const BalanceWeights& weights, const std::vector<int32_t>& part_of, int32_t parts);
double max_relative_load(const PartLoadTable& table, const std::vector<double>& fractions);

struct RebalanceMove {
  int64_t vertex = 0;   // the caller's vertex id (global id in a distributed caller; ties are broken by it)
  int32_t from = 0, to = -1;
  int64_t gain = 0;     // cut entries removed (negative: added)
  double delta = 0;     // penalty change when proposed (< 0)
  std::array<int64_t, kMaxBalanceConstraints> weight{};  // the vertex's weights (ncon used)
};

class PartLoads;

// The parts of one vertex's neighbours and how many neighbours each holds, gathered by a round's neighbour()
// calls and cleared after its propose() (only the parts touched: O(degree), not O(parts)).
struct NeighbourParts {
  explicit NeighbourParts(size_t parts) : count(parts, 0) {}
  void add(int32_t part) {
    if (count[part] == 0) touched.push_back(part);
    ++count[part];
  }
  void clear() {
    for (int32_t q : touched) count[q] = 0;
    touched.clear();
  }
  std::vector<int64_t> count;    // (parts)
  std::vector<int32_t> touched;  // the parts with count > 0
};

// One round of rebalance_loads. For every vertex v (any order, any process): if gives(part, w), call
// neighbour(part of x) for each neighbour x != v, then propose(v, part, w, moves). Then choose(all proposals,
// gathered in one place) applies them in a fixed order (independent of where they were proposed) with the
// round's checks, and returns the moves made; the caller updates its parts and load table.
class RebalanceRound {
 public:
  RebalanceRound(const PartLoadTable& table, const std::vector<double>& fractions, double imbalance);
  ~RebalanceRound();
  bool any_overloaded() const { return any_overloaded_; }
  bool gives(int32_t from, const int64_t* weight) const;
  void neighbour(int32_t part) { neighbours_.add(part); }
  void propose(int64_t vertex, int32_t from, const int64_t* weight, std::vector<RebalanceMove>& out);
  std::vector<RebalanceMove> choose(std::vector<RebalanceMove> moves);

 private:
  std::unique_ptr<PartLoads> loads_;
  double imbalance_, cap_ = 1;
  int32_t ncon_, lightest_ = 0;
  bool any_overloaded_ = false;
  std::vector<char> overloaded_;
  NeighbourParts neighbours_;
};

// ---- Refinement that keeps the balance ------------------------------------------------------------------------

struct RefineReport {
  int64_t moved = 0;   // moves applied
  int64_t gained = 0;  // cut edges removed as predicted (a lower bound of the true decrease, see below)
  int32_t rounds = 0;
};

// Moves boundary vertices to the neighbouring part they have most neighbours in, to win back cut that
// rebalance_loads's moves (or any method) gave away, without undoing the balance. Deterministic. Contract:
// - a move is made only when it removes cut (gain > 0) and leaves its destination within `imbalance` in every
//   constraint the vertex weighs in; the source only gets lighter. So no part's load in any constraint rises
//   above max(imbalance, its load before), and max_relative_load never grows;
// - in round r the parts are split in two by bit (r / 2) mod ceil(log2 P) of their index, and only one side
//   (r mod 2) gives, only to the other side. A vertex's neighbours in receiving parts do not move in its round,
//   so its gain is exact or an underestimate (a neighbour that also leaves its part can only help): every
//   round with moves strictly lowers the edge cut, and the pass ends (after kMaxRefineRounds rounds, or a
//   whole cycle of splits without moves, when no single move that removes cut and fits is left).
// adjacency: the graph's CSR (N rows). part_of: (N), updated in place.
// Built from RefineRound below, as the distributed pass of --method ptscotch is, so both make the same moves.
RefineReport refine_loads(const graph::Csr& adjacency, const BalanceWeights& weights,
                          const std::vector<double>& fractions, double imbalance, std::vector<int32_t>& part_of);

constexpr int32_t kMaxRefineRounds = 64;

// One round of refine_loads, used like RebalanceRound: for every vertex v with gives(part, w), neighbour(part
// of x) for each neighbour x != v, then propose(v, part, w, moves); choose(all proposals) applies them by gain
// (largest first, ties by vertex id), each only while its destination still fits.
class RefineRound {
 public:
  RefineRound(const PartLoadTable& table, const std::vector<double>& fractions, double imbalance,
              int32_t round_number);
  ~RefineRound();
  // Rounds in one cycle of splits: after this many rounds in a row without moves, no round can move.
  static int32_t cycle(int32_t parts);
  bool gives(int32_t from, const int64_t* /*weight*/) const { return giver_[from] != 0; }
  void neighbour(int32_t part) { neighbours_.add(part); }
  void propose(int64_t vertex, int32_t from, const int64_t* weight, std::vector<RebalanceMove>& out);
  std::vector<RebalanceMove> choose(std::vector<RebalanceMove> moves);

 private:
  std::unique_ptr<PartLoads> loads_;
  int32_t ncon_;
  std::vector<char> giver_;
  NeighbourParts neighbours_;
};

// rebalance_loads with the weights of options.balance, options.part_weights and options.imbalance on the
// graph's adjacency: what every method runs after its own assignment when options.balance is Balance::all.
// Logs one line when it moved vertices.
RebalanceReport rebalance(const graph::Graph& graph, const AssignOptions& options,
                          std::vector<int32_t>& part_of);

}  // namespace halogen::partition
