#pragma once
// The benchmarks of `halogen bench`; each adds one subcommand to `bench`.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <vector>

namespace halogen::app {

void add_bench_spmm(CLI::App& bench);       // SpMM GB/s vs a STREAM triad measured in the same run
void add_bench_gemm(CLI::App& bench);       // GEMM GFLOP/s
void add_bench_halo(CLI::App& bench);       // halo exchange, nccl-tests table (mpirun)
void add_bench_allreduce(CLI::App& bench);  // gradient allreduce, nccl-tests table (mpirun)
void add_bench_epoch(CLI::App& bench);      // one training epoch's phase breakdown (mpirun)
void add_bench_partition(CLI::App& bench);  // METIS vs random vs contiguous halo volume
void add_bench_profile(CLI::App& bench);    // a device profile for `halogen plan` (JSON)

// Measurements shared with `bench profile`, at the current OpenMP thread count:
// STREAM triad GB/s (3 arrays of `mib` MiB, best of 10; bench spmm's reference).
double stream_triad_gbs(int64_t mib);
// STREAM copy c = a on doubles, 2 x `mib` MiB, bytes read + written, best of 10 (GB/s; bench spmm's `copy`).
double stream_copy_gbs(int64_t mib);
// bench spmm's kernel on a uniform random square CSR (`rows`, `avg_degree`): the best of `iterations` calls
// (after one warm-up) per width, in seconds.
struct SpmmTiming {
  int64_t rows = 0, nnz = 0;
  std::vector<double> seconds;  // per width
};
SpmmTiming spmm_timing(int64_t rows, double avg_degree, const std::vector<int64_t>& widths, int iterations,
                       uint64_t seed);
// bench gemm's three products of a GCN layer (forward, grad_w, grad_h) of `rows` x f_in x f_out: their
// GFLOP/s together (medians of `iterations` calls).
double gemm_layer_gflops(int64_t rows, int64_t f_in, int64_t f_out, int iterations);
// A square size^3 sgemm's GFLOP/s (median of `iterations` calls after one warm-up): bench gemm's reference.
double square_sgemm_gflops(int64_t size, int iterations);

}  // namespace halogen::app
