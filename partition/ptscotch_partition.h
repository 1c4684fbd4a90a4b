#pragma once
// `mpirun -np K halogen partition GRAPH.h5 --parts P --method ptscotch -o DIR`: distributed, 64-bit
// partitioning with PT-Scotch (native SCOTCH_dgraph* interface; no METIS_* symbols, so no clash with libmetis).
// K processes and P parts are independent. Memory per process is about (graph file)/K:
//
//   1. read: process r reads only its slice of /csr (a contiguous vertex range balancing rows + entries,
//      partition/graph_slice.h), by hyperslab;
//   2. partition: SCOTCH_dgraphPart on the distributed graph without self-loops. PT-Scotch balances one vertex
//      weight, so a vertex weighs round(E/N) + degree: half the load is vertices, half stored edges;
//   3. assignment and degrees of remote neighbours: each process asks the owners of its slice's remote
//      columns (MPI_Alltoallv) for their part and degree;
//   4. rows to part owners: part p is built by process p % K, which receives the rows of its vertices with
//      the part and degree of every column (MPI_Alltoallv, in rounds of bounded size: partition/received_rows.h),
//      builds the shard with the builder every method uses (build_shard over a RowSource,
//      partition/shard_builder.h) - halo, exchange plan, local CSR, splits, labels, features read from the
//      file for its owned rows - and writes it. Shards, assignment.h5 and meta.json are the same bytes as the
//      METIS path's for the same assignment.
//
// Needs an undirected (symmetric) static graph: a directed graph, a dynamic graph (/snapshots) or regression
// targets are refused with one line naming --method metis. The whole vertex assignment (N int32) is gathered
// on process 0 for assignment.h5 and every process reads the split lists whole; both are O(N), not O(E).
#include "partition/partition_dir.h"

namespace halogen::partition {

// Whether this build has PT-Scotch (HALOGEN_HAVE_PTSCOTCH); without it the method is a UserError.
bool ptscotch_available();

// The command, collective over MPI_COMM_WORLD (MPI initialised by the caller, any number of processes,
// including 1). Same result on every process (statistics, phases of process 0); process_peak_rss_bytes is the
// largest peak of any process, and meta.json["memory"]["peak_rss_mib_per_process"] lists them all. A
// UserError on any process is thrown on every process (the message of the lowest such rank), after which
// the output directory is as it was.
PartitionResult partition_graph_file_ptscotch(const PartitionRequest& request);

}  // namespace halogen::partition
