#pragma once
// Vertex -> part assignment: METIS k-way (the default), and the random and contiguous baselines; with the
// default Balance::all every method is followed by partition/rebalance.h's rebalance().
// Every method is deterministic for a given seed (METIS: METIS_OPTION_SEED; random: counter-based RNG).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "partition/vertex_order.h"

namespace halogen::partition {

// ptscotch: PT-Scotch on K MPI processes, each holding 1/K of the graph (partition/ptscotch_partition.h); it
// partitions a graph file, never a graph in memory (assign_parts refuses it).
enum class Method { metis, random, contiguous, ptscotch };
enum class Objective { cut, volume };  // METIS_OBJTYPE_CUT / METIS_OBJTYPE_VOL
// What each part's load is balanced on:
//   all:      (the default) owned vertices, stored edges (the row lengths of owned vertices) and, when the
//             graph has a training split, training vertices: one METIS constraint each (ncon = 2 or 3), then
//             rebalance() (partition/rebalance.h) moves vertices out of any part still above --imbalance in
//             one of them. Every method (metis, random, contiguous) is followed by rebalance(). On power-law
//             graphs the single-constraint modes below leave one of the two badly unbalanced (RMAT scale 18,
//             P = 4, vertices: stored edges 1.79x the mean; edges: vertices 1.9x).
//   vertices: every vertex weighs 1;
//   edges:    a vertex weighs 1 + its degree (SpMM work);
//   train:    two constraints, 1 + degree and "is a training vertex" (METIS ncon=2), so every rank gets
//             balanced work and balanced training vertices. The baselines balance training vertices only.
// Only `all` is rebalanced after the method; the other three are the method's result as it was.
enum class Balance { vertices, edges, train, all };

struct AssignOptions {
  Method method = Method::metis;
  int32_t num_parts = 1;
  Objective objective = Objective::cut;
  double imbalance = 1.03;  // allowed max/mean load; METIS ufactor = 1000 * (imbalance - 1)
  uint64_t seed = 1;
  Balance balance = Balance::all;
  std::vector<double> part_weights;  // (num_parts) relative target sizes (METIS tpwgts); empty = equal
  // METIS_OPTION_NITER, METIS's default 10. Fewer is faster: 3 gave the same cut on RMAT scale 20 at P=8
  // for 25% less METIS time, but 8% more cut at P=64 (docs/partition.md).
  int32_t refine_iterations = 10;
  // Order of each shard's owned vertices (partition/vertex_order.h); not part of the assignment, applied to
  // every shard after it is built. Dynamic graphs (snapshots) keep gid.
  VertexOrder vertex_order = VertexOrder::rcm;
};

// Parse command-line spellings; UserError naming the flag and the accepted values.
Method parse_method(const std::string& text);
Objective parse_objective(const std::string& text);
Balance parse_balance(const std::string& text);
// "1,1,2,2" -> {1,1,2,2}; UserError unless exactly num_parts positive finite numbers.
std::vector<double> parse_part_weights(const std::string& text, int32_t num_parts);
const char* method_name(Method method);
const char* objective_name(Objective objective);
const char* balance_name(Balance balance);

// Checks P against the graph (1 <= P <= N) and the options; UserError with one clear line.
void validate_options(const graph::Graph& graph, const AssignOptions& options);

// Returns part_of (N): the part of every vertex, in [0, num_parts). Calls validate_options first.
std::vector<int32_t> assign_parts(const graph::Graph& graph, const AssignOptions& options);

// The baselines, exposed for tests. Vertices are taken in `order` (identity for contiguous, a seeded random
// permutation for random) and cut into num_parts consecutive runs whose weights follow the target fractions.
std::vector<int32_t> assign_contiguous(const graph::Graph& graph, const AssignOptions& options);
std::vector<int32_t> assign_random(const graph::Graph& graph, const AssignOptions& options);

// METIS_PartGraphKway on the symmetrised graph without self-loops. UserError when the graph exceeds METIS's
// 32-bit idx_t (names the limit and suggests --method ptscotch).
std::vector<int32_t> assign_metis(const graph::Graph& graph, const AssignOptions& options);

// What assign_metis_within did (logged and stored in meta.json by `halogen partition`).
struct MetisMemoryReport {
  bool sparsified = false;      // METIS partitioned a sparsified graph, refined on the full one
  double keep_degree = 0;       // k of partition/metis_memory.h's sparsify
  int64_t entries = 0;          // symmetric adjacency entries of the graph
  int64_t metis_entries = 0;    // entries METIS was given
  int64_t estimated_bytes = 0;  // estimate_metis_bytes of METIS's input
  int64_t cut_before_refinement = 0, cut_after_refinement = 0;  // cut weight (sparsified only)
};

// assign_metis for a peak memory of `budget_bytes` (<= 0: unlimited) for the whole process. METIS is given
// only its 32-bit input: graph.adjacency is released while METIS runs and restored from reread_adjacency()
// (which must return the same CSR, e.g. read again from the graph file). When METIS's estimated peak
// (partition/metis_memory.h) does not fit the budget less what else is resident (modelled from the sizes of
// the graph's arrays plus 48 MiB for the process, not measured, so results do not depend on the
// allocator), METIS partitions a
// sparsified graph that fits and a greedy refinement on the full graph follows. Same result as
// assign_metis when nothing is sparsified; deterministic per seed either way.
std::vector<int32_t> assign_metis_within(graph::Graph& graph, const AssignOptions& options,
                                         int64_t budget_bytes,
                                         const std::function<graph::Csr()>& reread_adjacency,
                                         MetisMemoryReport* report = nullptr);

// UserError unless a graph of `num_nodes` vertices and `num_entries` adjacency entries (both directions of
// every edge) fits METIS's idx_t. Called by assign_metis; exposed for tests.
void check_metis_limits(int64_t num_nodes, int64_t num_entries);

}  // namespace halogen::partition
