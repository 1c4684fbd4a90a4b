// METIS k-way partitioning (libmetis 5.1, 32-bit idx_t and real_t on Debian).
#include <metis.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "core/log.h"
#include "partition/assign.h"
#include "partition/snapshot_weight.h"

namespace halogen::partition {

namespace {

constexpr int64_t kIdxMax = std::numeric_limits<idx_t>::max();

[[noreturn]] void too_large(const std::string& what, int64_t value) {
  throw UserError(
      strformat("--method metis: the graph's %s (%lld) exceeds METIS's 32-bit idx_t limit %lld; use "
                "--method contiguous or --method random for graphs this large",
                what.c_str(), static_cast<long long>(value), static_cast<long long>(kIdxMax)));
}

// METIS's input: the graph made undirected (A + A^T, deduplicated) without self-loops.
struct MetisGraph {
  std::vector<idx_t> xadj, adjncy;
};

MetisGraph metis_input(const graph::Graph& graph) {
  const graph::Csr& adj = graph.adjacency;
  const int64_t n = graph.num_nodes;
  MetisGraph out;
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

}  // namespace

void check_metis_limits(int64_t num_nodes, int64_t num_entries) {
  if (num_nodes >= kIdxMax) too_large("vertex count", num_nodes);
  if (num_entries > kIdxMax) too_large("adjacency entry count", num_entries);
}

std::vector<int32_t> assign_metis(const graph::Graph& graph, const AssignOptions& options) {
  validate_options(graph, options);
  const int64_t n = graph.num_nodes;
  check_metis_limits(n, 0);
  std::vector<int32_t> part_of(n, 0);
  if (options.num_parts == 1) return part_of;  // METIS is not needed (and 5.1 mishandles nparts=1)

  MetisGraph input = metis_input(graph);

  Balance balance = options.balance;
  if (balance == Balance::train && graph.train.empty()) {
    log::warn("--balance train: the graph has no training vertices; balancing edges only");
    balance = Balance::edges;
  }
  idx_t ncon = balance == Balance::train ? 2 : 1;
  std::vector<idx_t> vwgt;
  if (balance != Balance::vertices) {
    // Work of a vertex = 1 + its row length; the sum must fit idx_t too.
    const int64_t total = n + graph.adjacency.nnz();
    if (total > kIdxMax) too_large("total vertex weight (vertices + edges) for --balance edges|train", total);
    vwgt.resize(static_cast<size_t>(n) * ncon, 0);
    for (int64_t v = 0; v < n; ++v) vwgt[v * ncon] = static_cast<idx_t>(1 + graph.adjacency.degree(v));
    if (ncon == 2)
      for (int64_t v : graph.train) vwgt[v * 2 + 1] = 1;
  }

  std::vector<real_t> tpwgts;
  if (!options.part_weights.empty()) {
    const double total = std::accumulate(options.part_weights.begin(), options.part_weights.end(), 0.0);
    tpwgts.resize(static_cast<size_t>(options.num_parts) * ncon);
    for (int32_t p = 0; p < options.num_parts; ++p)
      for (idx_t c = 0; c < ncon; ++c)
        tpwgts[p * ncon + c] = static_cast<real_t>(options.part_weights[p] / total);
  }

  idx_t metis_options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(metis_options);
  metis_options[METIS_OPTION_OBJTYPE] =
      options.objective == Objective::cut ? METIS_OBJTYPE_CUT : METIS_OBJTYPE_VOL;
  // METIS rejects ufactor 0 ("Incorrect ufactor"): --imbalance 1.0 asks for the tightest balance it accepts.
  metis_options[METIS_OPTION_UFACTOR] =
      std::max<idx_t>(1, static_cast<idx_t>(std::lround(1000.0 * (options.imbalance - 1.0))));
  metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed % static_cast<uint64_t>(kIdxMax));
  metis_options[METIS_OPTION_NUMBERING] = 0;
  metis_options[METIS_OPTION_NITER] = options.refine_iterations;

  // Dynamic graphs: cutting an edge costs the number of snapshots holding it (partition/snapshot_weight.h).
  static_assert(sizeof(idx_t) == sizeof(int32_t), "snapshot_edge_counts produces 32-bit weights");
  std::vector<int32_t> adjwgt = snapshot_edge_counts(graph, input.xadj, input.adjncy);

  idx_t nvtxs = static_cast<idx_t>(n), nparts = options.num_parts, objval = 0;
  std::vector<idx_t> part(n);
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, input.xadj.data(), input.adjncy.data(),
                                         vwgt.empty() ? nullptr : vwgt.data(), /*vsize=*/nullptr,
                                         adjwgt.empty() ? nullptr : adjwgt.data(), &nparts,
                                         tpwgts.empty() ? nullptr : tpwgts.data(),
                                         /*ubvec=*/nullptr, metis_options, &objval, part.data());
  if (status == METIS_ERROR_MEMORY) throw std::bad_alloc();
  if (status != METIS_OK)
    throw UserError(
        strformat("--method metis: METIS_PartGraphKway failed (status %d) on this graph; try "
                  "--method contiguous or --method random",
                  status));
  for (int64_t v = 0; v < n; ++v) part_of[v] = static_cast<int32_t>(part[v]);
  return part_of;
}

}  // namespace halogen::partition
