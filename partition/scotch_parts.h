#pragma once
// The PT-Scotch call of `--method ptscotch`: SCOTCH_dgraphPart of the distributed graph that the processes'
// slices make together (partition/graph_slice.h), through the native SCOTCH_dgraph* interface of the 64-bit
// library (no METIS_* symbols, so no clash with libmetis). One thread per process, seeded: the same input, K
// and --seed give the same partition.
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "partition/assign.h"
#include "partition/graph_slice.h"

namespace halogen::partition {

// Whether this build has PT-Scotch (HALOGEN_HAVE_PTSCOTCH); without it the method is a UserError.
bool ptscotch_available();

// Collective over `comm`: the part of each vertex of this process's slice, for options.num_parts parts.
// Self-loops are dropped; vertex i of the slice weighs base_weight + degree[i]. UserError when PT-Scotch
// fails or the build has none (options.num_parts > 1).
std::vector<int32_t> scotch_parts(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& degree,
                                  int64_t base_weight, const AssignOptions& options);

}  // namespace halogen::partition
