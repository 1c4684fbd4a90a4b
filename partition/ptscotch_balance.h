#pragma once
// The default balance (--balance all) of --method ptscotch: PT-Scotch balances one vertex weight, these steps
// bring vertices, stored edges and training vertices each within --imbalance while keeping PT-Scotch's cut
// (docs/partition.md, "Distributed 64-bit partitioning"). Collective over `comm`; every process holds its
// slice of rows (partition/graph_slice.h), `bounds` the K+1 slice boundaries, `train` the sorted training ids,
// `part_local` the part of each row of its slice.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "partition/assign.h"
#include "partition/graph_slice.h"
#include "partition/rebalance.h"

namespace halogen::partition {

// The default balance (vertices, stored edges and training vertices each within options.imbalance of their
// target, partition/rebalance.h) on PT-Scotch's assignment, which balances only their sum: rebalance_loads's
// rounds over the processes' slices. Every process proposes moves for its own rows, with the parts of their
// remote neighbours asked from the owners; process 0 chooses among all proposals (RebalanceRound::choose,
// rebalance_loads's order and checks) and broadcasts the moves made. So the moves are the ones the serial
// rebalance makes from the same assignment, whatever K. Memory on process 0: 8 words per proposal of a round
// (at most the vertices of the overloaded parts). Then the refinement (RefineRound, refine_loads's rounds) in
// the same way, also when nothing was over the bound. P = 1: nothing.
RebalanceReport rebalance_slices(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                                 const std::vector<int64_t>& train, int64_t num_edges, const AssignOptions& options,
                                 std::vector<int32_t>& part_local);

// Stored cut entries of the whole graph (each cut edge counts from both sides), from the slices.
int64_t slice_cut_entries(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                          const std::vector<int32_t>& part_local);

// Fine parts -> parts: the quotient graph of `fine_local`'s F fine parts (vertex weights: the slice's
// vertices, stored edges and training vertices per fine part; edge weights: entries between fine parts) is
// gathered on process 0, which partitions it into options.num_parts with METIS's multi-constraint k-way, and
// broadcasts the map. PT-Scotch balances one weight; METIS balances each constraint on the quotient, whose
// vertices are PT-Scotch's own low-cut pieces, so the balance costs little cut. The quotient has F vertices
// and at most F^2 edges (F = kFinePartsPerPart x P <= kMaxFineParts). Returns the part of each slice row.
std::vector<int32_t> merge_fine_parts(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                                      const std::vector<int64_t>& train, int64_t num_edges, int32_t fine_parts,
                                      const AssignOptions& options, const std::vector<int32_t>& fine_local);

// The default balance (Balance::all) on PT-Scotch's assignment `part_local`, which balances only the sum of the
// constraints. Direct route: rebalance_slices (moves, then the refinement). When that grows the edge cut by more
// than kFineRouteCutGrowth (1.05), the fine route too: partition_into(options with kFinePartsPerPart (8) x P
// parts, no part weights) - PT-Scotch again, collective - merged into P by merge_fine_parts (METIS
// multi-constraint on the quotient), then rebalance_slices for what the merge left over the bound; the route
// with the smaller cut is kept (ties: direct). Both are deterministic for a given K; returns the route taken
// ("direct" or "fine").
std::string balance_ptscotch(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                             const std::vector<int64_t>& train, int64_t num_edges, const AssignOptions& options,
                             const std::function<std::vector<int32_t>(const AssignOptions&)>& partition_into,
                             std::vector<int32_t>& part_local);

}  // namespace halogen::partition
