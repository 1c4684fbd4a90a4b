#pragma once
// The benchmarks of `halogen bench`; each adds one subcommand to `bench`.
#include <CLI/CLI.hpp>

namespace halogen::app {

void add_bench_spmm(CLI::App& bench);       // SpMM GB/s vs a STREAM triad measured in the same run
void add_bench_gemm(CLI::App& bench);       // GEMM GFLOP/s
void add_bench_halo(CLI::App& bench);       // halo exchange, nccl-tests table (mpirun)
void add_bench_allreduce(CLI::App& bench);  // gradient allreduce, nccl-tests table (mpirun)
void add_bench_epoch(CLI::App& bench);      // one training epoch's phase breakdown (mpirun)
void add_bench_partition(CLI::App& bench);  // METIS vs random vs contiguous halo volume

}  // namespace halogen::app
