// METIS k-way partitioning (libmetis 5.1, 32-bit idx_t and real_t on Debian).
#include <dlfcn.h>
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "partition/assign.h"
#include "partition/metis_memory.h"
#include "partition/rebalance.h"
#include "partition/snapshot_weight.h"

// METIS's GKlib catches SIGTERM (and SIGABRT) around every call (gk_sigtrap, undone by gk_siguntrap) and turns
// it into METIS_ERROR, so a job cancelled by its scheduler said its graph was bad. These definitions take the
// place of libmetis's (its calls go through the PLT): they run GKlib's own, then put the interrupt guard's
// handlers back (core/interrupt.h), which pass the SIGTERM GKlib raises itself on an internal error on to
// gk_sigthrow, so that error still returns METIS_ERROR.
extern "C" {
void gk_sigthrow(int signum);
int gk_sigtrap() {
  static const auto real = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "gk_sigtrap"));
  const int result = real != nullptr ? real() : 0;
  halogen::interrupt::set_forward(gk_sigthrow);
  halogen::interrupt::reinstall();
  return result;
}
int gk_siguntrap() {
  static const auto real = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "gk_siguntrap"));
  const int result = real != nullptr ? real() : 0;
  halogen::interrupt::set_forward(nullptr);
  halogen::interrupt::reinstall();
  return result;
}
}

namespace halogen::partition {

namespace {

constexpr int64_t kIdxMax = std::numeric_limits<idx_t>::max();

[[noreturn]] void too_large(const std::string& what, int64_t value) {
  throw UserError(
      strformat("--method metis: the graph's %s (%lld) exceeds METIS's 32-bit idx_t limit %lld; use "
                "--method ptscotch (64-bit, `mpirun -np K halogen partition ... --method ptscotch`)",
                what.c_str(), static_cast<long long>(value), static_cast<long long>(kIdxMax)));
}

static_assert(sizeof(idx_t) == sizeof(int32_t), "SymmetricGraph holds METIS's 32-bit idx_t");

// METIS's input: the graph made undirected (A + A^T, deduplicated) without self-loops.
SymmetricGraph metis_input(const graph::Graph& graph) {
  const graph::Csr& adj = graph.adjacency;
  const int64_t n = graph.num_nodes;
  SymmetricGraph out;
  out.xadj.assign(n + 1, 0);
  // An undirected Graph stores every edge both ways (graph.h's contract, checked by io::read_graph), so its
  // adjacency is METIS's input as it is, less self-loops; a directed one is merged with its transpose.
  if (!graph.directed) {
    int64_t count = 0;
    for (int64_t u = 0; u < n; ++u) {
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e) count += adj.indices[e] != u;
      if (count > kIdxMax) too_large("adjacency entry count", adj.nnz());
      out.xadj[u + 1] = static_cast<idx_t>(count);
    }
    out.adjncy.resize(count);
#pragma omp parallel for schedule(dynamic, 4096)
    for (int64_t u = 0; u < n; ++u) {
      idx_t at = out.xadj[u];
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
        if (adj.indices[e] != u) out.adjncy[at++] = static_cast<idx_t>(adj.indices[e]);
    }
    return out;
  }
  // Transpose (rows ascending, so every transposed row comes out sorted), then merge row u of A and A^T.
  if (adj.nnz() > kIdxMax) too_large("edge count", adj.nnz());
  std::vector<idx_t> t_ptr(n + 1, 0), t_idx(adj.nnz());
  for (int64_t e = 0; e < adj.nnz(); ++e) ++t_ptr[adj.indices[e] + 1];
  for (int64_t v = 0; v < n; ++v) t_ptr[v + 1] += t_ptr[v];
  {
    std::vector<idx_t> fill(t_ptr.begin(), t_ptr.end() - 1);
    for (int64_t u = 0; u < n; ++u)
      for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
        t_idx[fill[adj.indices[e]]++] = static_cast<idx_t>(u);
  }
  auto merge_row = [&](int64_t u, idx_t* dst) {  // returns the merged length; writes when dst != nullptr
    int64_t a = adj.indptr[u], a_end = adj.indptr[u + 1], b = t_ptr[u], b_end = t_ptr[u + 1], len = 0;
    int64_t last = -1;
    while (a < a_end || b < b_end) {
      int64_t next;
      if (b >= b_end || (a < a_end && adj.indices[a] <= t_idx[b]))
        next = adj.indices[a++];
      else
        next = t_idx[b++];
      if (next == u || next == last) continue;
      if (dst) dst[len] = static_cast<idx_t>(next);
      ++len;
      last = next;
    }
    return len;
  };
  std::vector<int64_t> length(n);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t u = 0; u < n; ++u) length[u] = merge_row(u, nullptr);
  int64_t count = 0;
  for (int64_t u = 0; u < n; ++u) {
    count += length[u];
    if (count > kIdxMax) too_large("symmetrised adjacency entry count", count);
    out.xadj[u + 1] = static_cast<idx_t>(count);
  }
  length = {};
  out.adjncy.resize(count);
#pragma omp parallel for schedule(dynamic, 4096)
  for (int64_t u = 0; u < n; ++u) merge_row(u, out.adjncy.data() + out.xadj[u]);
  return out;
}

idx_t metis_ufactor(const AssignOptions& options) {
  return std::max<idx_t>(1, static_cast<idx_t>(std::lround(1000.0 * (options.imbalance - 1.0))));
}

constexpr int32_t kRefinementPasses = 8;

// The process without the graph: code, libraries, HDF5's caches, thread stacks (about 20 MiB measured).
constexpr int64_t kProcessBaseBytes = int64_t{48} << 20;

// Bytes the graph's arrays hold (capacity is what is resident; sizes are what a given file determines).
int64_t resident_bytes(const graph::Graph& g) {
  auto csr_bytes = [](const graph::Csr& c) {
    return (c.indptr.size() + c.indices.size()) * sizeof(int64_t) + c.weight.size() * sizeof(float);
  };
  size_t bytes = csr_bytes(g.adjacency) + g.features.size() * sizeof(float) +
                 g.labels.size() * sizeof(int32_t) + g.targets.size() * sizeof(float) +
                 (g.train.size() + g.valid.size() + g.test.size() + g.orig_id.size()) * sizeof(int64_t);
  for (const graph::Csr& snapshot : g.snapshots) bytes += csr_bytes(snapshot);
  return static_cast<int64_t>(bytes);
}

}  // namespace

void check_metis_limits(int64_t num_nodes, int64_t num_entries) {
  if (num_nodes >= kIdxMax) too_large("vertex count", num_nodes);
  if (num_entries > kIdxMax) too_large("adjacency entry count", num_entries);
}

namespace {

// Vertex weights (ncon per vertex) and target part fractions as METIS takes them.
struct MetisWeights {
  idx_t ncon = 1;
  std::vector<idx_t> vwgt;     // empty: every vertex weighs 1
  std::vector<real_t> tpwgts;  // empty: equal parts
};

MetisWeights metis_weights(const graph::Graph& graph, const AssignOptions& options) {
  const int64_t n = graph.num_nodes;
  MetisWeights w;
  if (options.balance == Balance::train && graph.train.empty())
    log::warn("--balance train: the graph has no training vertices; balancing edges only");
  if (options.balance != Balance::vertices) {  // vertices: vwgt null, every vertex weighs 1
    const BalanceWeights b = balance_weights(graph, options.balance);
    w.ncon = b.ncon;
    // Every constraint's total must fit idx_t too (at most vertices + stored edges).
    for (int32_t c = 0; c < b.ncon; ++c) {
      int64_t total = 0;
      for (int64_t v = 0; v < n; ++v) total += b.weight[v * b.ncon + c];
      if (total > kIdxMax)
        too_large("total vertex weight (" + b.names[c] + ") for --balance " + balance_name(options.balance),
                  total);
    }
    w.vwgt.assign(b.weight.begin(), b.weight.end());
  }
  if (!options.part_weights.empty()) {
    const double total = std::accumulate(options.part_weights.begin(), options.part_weights.end(), 0.0);
    w.tpwgts.resize(static_cast<size_t>(options.num_parts) * w.ncon);
    for (int32_t p = 0; p < options.num_parts; ++p)
      for (idx_t c = 0; c < w.ncon; ++c)
        w.tpwgts[p * w.ncon + c] = static_cast<real_t>(options.part_weights[p] / total);
  }
  return w;
}

std::vector<int32_t> run_metis(SymmetricGraph& input, MetisWeights& w, const AssignOptions& options) {
  idx_t metis_options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(metis_options);
  metis_options[METIS_OPTION_OBJTYPE] =
      options.objective == Objective::cut ? METIS_OBJTYPE_CUT : METIS_OBJTYPE_VOL;
  // METIS rejects ufactor 0 ("Incorrect ufactor"): --imbalance 1.0 asks for the tightest balance it accepts.
  metis_options[METIS_OPTION_UFACTOR] = metis_ufactor(options);
  metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed % static_cast<uint64_t>(kIdxMax));
  metis_options[METIS_OPTION_NUMBERING] = 0;
  metis_options[METIS_OPTION_NITER] = options.refine_iterations;

  const int64_t n = input.num_nodes();
  idx_t nvtxs = static_cast<idx_t>(n), nparts = options.num_parts, objval = 0;
  std::vector<idx_t> part(n);
  const int status = METIS_PartGraphKway(&nvtxs, &w.ncon, input.xadj.data(), input.adjncy.data(),
                                         w.vwgt.empty() ? nullptr : w.vwgt.data(), /*vsize=*/nullptr,
                                         input.adjwgt.empty() ? nullptr : input.adjwgt.data(), &nparts,
                                         w.tpwgts.empty() ? nullptr : w.tpwgts.data(),
                                         /*ubvec=*/nullptr, metis_options, &objval, part.data());
  if (status == METIS_ERROR_MEMORY) throw std::bad_alloc();
  if (status != METIS_OK)
    throw UserError(
        strformat("--method metis: METIS_PartGraphKway failed (status %d) on this graph; try "
                  "--method contiguous or --method random",
                  status));
  return std::vector<int32_t>(part.begin(), part.end());
}

}  // namespace

std::vector<int32_t> assign_metis(const graph::Graph& graph, const AssignOptions& options) {
  validate_options(graph, options);
  const int64_t n = graph.num_nodes;
  check_metis_limits(n, 0);
  if (options.num_parts == 1) return std::vector<int32_t>(n, 0);  // METIS 5.1 mishandles nparts=1

  SymmetricGraph input = metis_input(graph);
  MetisWeights weights = metis_weights(graph, options);
  // Dynamic graphs: cutting an edge costs the number of snapshots holding it (partition/snapshot_weight.h).
  input.adjwgt = snapshot_edge_counts(graph, input.xadj, input.adjncy);
  std::vector<int32_t> part_of = run_metis(input, weights, options);
  input = SymmetricGraph{};
  weights = MetisWeights{};
  if (options.balance == Balance::all) rebalance(graph, options, part_of);
  return part_of;
}

std::vector<int32_t> assign_metis_within(graph::Graph& graph, const AssignOptions& options,
                                         int64_t budget_bytes,
                                         const std::function<graph::Csr()>& reread_adjacency,
                                         MetisMemoryReport* report) {
  validate_options(graph, options);
  const int64_t n = graph.num_nodes;
  check_metis_limits(n, 0);
  MetisMemoryReport local;
  MetisMemoryReport& r = report ? *report : local;
  r = MetisMemoryReport{};
  if (options.num_parts == 1) return std::vector<int32_t>(n, 0);

  SymmetricGraph input = metis_input(graph);
  MetisWeights weights = metis_weights(graph, options);
  input.adjwgt = snapshot_edge_counts(graph, input.xadj, input.adjncy);
  graph.adjacency = graph::Csr{};  // METIS needs only its input; the CSR is read again afterwards
  r.entries = r.metis_entries = input.num_entries();

  // What METIS may use: the budget less everything else resident (its input counts as METIS's). Modelled
  // from the sizes held, not measured, so the same graph and budget always give the same partition.
  const int64_t other =
      kProcessBaseBytes + resident_bytes(graph) + static_cast<int64_t>(weights.vwgt.size() * sizeof(idx_t));
  const int64_t allowed = budget_bytes - other;
  r.estimated_bytes = estimate_metis_bytes(n, input.num_entries(), options.num_parts);
  std::vector<int32_t> part_of;
  if (budget_bytes <= 0 || r.estimated_bytes <= allowed) {
    part_of = run_metis(input, weights, options);
    input = SymmetricGraph{};
    weights = MetisWeights{};
    graph.adjacency = reread_adjacency();
    if (options.balance == Balance::all) rebalance(graph, options, part_of);
    return part_of;
  }

  // Too large: METIS partitions a sparsified graph whose estimate fits; refinement on the full graph follows.
  const int64_t levels = metis_levels(n, options.num_parts);
  // 5% margin: the kept count is random around its expectation and METIS's levels vary.
  const int64_t target = std::max<int64_t>(n, (allowed * 95 / 100 - 64 * n) / (8 * levels));
  {
    SymmetricGraph sparse = sparsify(input, target, options.seed, &r.keep_degree);
    input = SymmetricGraph{};
    r.sparsified = true;
    r.metis_entries = sparse.num_entries();
    r.estimated_bytes = estimate_metis_bytes(n, sparse.num_entries(), options.num_parts);
    part_of = run_metis(sparse, weights, options);
  }
  graph.adjacency = reread_adjacency();
  SymmetricGraph full = metis_input(graph);
  full.adjwgt = snapshot_edge_counts(graph, full.xadj, full.adjncy);
  r.cut_before_refinement = cut_weight(full, part_of);

  // Loads allowed to a part: METIS's own bound, imbalance x target fraction x total, per constraint.
  const int32_t ncon = weights.ncon, parts = options.num_parts;
  std::vector<double> fraction(parts, 1.0 / parts);
  if (!options.part_weights.empty()) {
    const double total = std::accumulate(options.part_weights.begin(), options.part_weights.end(), 0.0);
    for (int32_t p = 0; p < parts; ++p) fraction[p] = options.part_weights[p] / total;
  }
  std::vector<int64_t> total(ncon, 0);
  for (int64_t v = 0; v < n; ++v)
    for (int32_t c = 0; c < ncon; ++c) total[c] += weights.vwgt.empty() ? 1 : weights.vwgt[v * ncon + c];
  const double ubfactor = 1.0 + metis_ufactor(options) / 1000.0;
  std::vector<int64_t> max_load(static_cast<size_t>(parts) * ncon);
  for (int32_t p = 0; p < parts; ++p)
    for (int32_t c = 0; c < ncon; ++c)
      max_load[p * ncon + c] = static_cast<int64_t>(ubfactor * fraction[p] * static_cast<double>(total[c]));
  std::vector<int32_t> vwgt(weights.vwgt.begin(), weights.vwgt.end());
  refine_greedy(full, vwgt, ncon, max_load, parts, part_of, kRefinementPasses);
  r.cut_after_refinement = cut_weight(full, part_of);
  // rebalance's own weights and the CSR are all it needs: METIS's input and weights go first.
  full = SymmetricGraph{};
  vwgt = {};
  weights = MetisWeights{};
  if (options.balance == Balance::all) rebalance(graph, options, part_of);
  return part_of;
}

}  // namespace halogen::partition
