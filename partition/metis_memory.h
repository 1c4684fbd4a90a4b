#pragma once
// Keeping METIS within a memory budget. METIS 5.1 keeps every level of its coarsening hierarchy until the
// partition is projected back, and on random-like and power-law graphs a level's edge count barely falls
// (RMAT scale 20: 31.4M entries at 1M vertices, still 25.7M at 17k), so its peak is about
// 8 bytes x entries x levels: 2.0 GB for 31.4M entries, 1.06 GB for 16M (docs/partition.md). When that does
// not fit, METIS partitions a sparsified graph (every vertex keeps about k of its edges, kept edges weigh
// 1/probability so cut weights stay unbiased) and a greedy k-way refinement on the full graph follows.
#include <cstdint>
#include <vector>

namespace halogen::partition {

// METIS's input: symmetric rows without self-loops (CSR, int32 = METIS's idx_t). adjwgt: empty (all 1) or
// one weight per entry, symmetric.
struct SymmetricGraph {
  std::vector<int32_t> xadj{0}, adjncy, adjwgt;
  int64_t num_nodes() const { return static_cast<int64_t>(xadj.size()) - 1; }
  int64_t num_entries() const { return static_cast<int64_t>(adjncy.size()); }
  int64_t bytes() const {
    return static_cast<int64_t>((xadj.size() + adjncy.size() + adjwgt.size()) * sizeof(int32_t));
  }
};

// Graphs METIS keeps at once for N vertices and P parts (coarsening to max(N / (20 log2 P), 30 P) vertices,
// about halving per level; the input counts as one; one more for slack).
int32_t metis_levels(int64_t num_nodes, int32_t num_parts);
// Bytes METIS 5.1's k-way partitioning of such a graph holds at its peak, including its input (xadj,
// adjncy, adjwgt: 8 bytes per entry per level, 64 per vertex): within 5% above the measured peaks of RMAT
// scale 20 and a 1M-vertex SBM.
int64_t estimate_metis_bytes(int64_t num_nodes, int64_t num_entries, int32_t num_parts);

// Keeps each undirected edge {u, v} with probability p = min(1, k / min(deg u, deg v)) (decided by a hash of
// seed, u and v, so symmetric and deterministic) and weighs a kept edge round(w / p), w its weight in `graph`
// (1 when adjwgt is empty). k is chosen so the expected entry count is about `target_entries`; every vertex
// of degree <= k keeps all its edges, so low-degree vertices keep their neighbourhood. Returns `graph`
// unchanged (a copy) when it already has at most target_entries entries. *keep_degree receives k.
SymmetricGraph sparsify(const SymmetricGraph& graph, int64_t target_entries, uint64_t seed,
                        double* keep_degree = nullptr);

// Greedy k-way refinement of `part_of` on the full graph: in passes over the vertices in id order, a vertex
// moves to the neighbouring part with the largest positive cut gain (ties: lowest part id) when that part's
// load stays within max_load for every constraint. vwgt: empty (every vertex weighs 1, ncon = 1) or N x ncon.
// max_load[p * ncon + c] bounds part p's load of constraint c. Stops after `max_passes` or a pass without a
// move. Deterministic. Returns the total cut weight removed (>= 0).
int64_t refine_greedy(const SymmetricGraph& graph, const std::vector<int32_t>& vwgt, int32_t ncon,
                      const std::vector<int64_t>& max_load, int32_t num_parts, std::vector<int32_t>& part_of,
                      int32_t max_passes);

// Total weight of the edges cut by part_of (each undirected edge once).
int64_t cut_weight(const SymmetricGraph& graph, const std::vector<int32_t>& part_of);

}  // namespace halogen::partition
