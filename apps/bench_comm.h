#pragma once
// The shared harness of the communication benchmarks (`halogen bench halo`, `halogen bench allreduce`), in
// the nccl-tests style: a header that states what every column means, then one row per message size with
//   size  count  time(us)  mean(us)  algbw(GB/s)  busbw(GB/s)  #wrong
// time(us) is the slowest rank's mean iteration time, mean(us) the mean over ranks of each rank's mean time;
// bandwidths are computed from time(us) (the slowest rank, what a training step waits for). #wrong is the
// number of elements, summed over all ranks, that differ from the value the data was made to have on purpose
// (data_value()); it must be 0, and the command exits 1 when it is not.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi_session.h"

namespace halogen::app {

struct CommBenchOptions {
  std::string device = "cpu";  // cpu: MpiComm on host buffers; cuda: device buffers (CUDA builds) moved by...
  std::string comm = "auto";   // ...NcclComm (nccl), HostStagedComm over MpiComm (mpi), or auto (nccl unless
                               // ranks share a GPU, as `halogen train`); ignored on the CPU
  int warmup = 5;              // untimed iterations before each size
  int iterations = 20;         // timed iterations per size
  uint64_t seed = 1;
  bool inject_error = false;  // corrupt one checked element on the last rank (tests that #wrong can be > 0)
};

// The value of element (global id, column) of the benchmark data: an integer in [-512, 511] drawn by the
// counter-based RNG from (seed, id, column). Integers so that sums over any number of ranks, in any order,
// are exact in float (|sum| < 2^24 for up to 16384 ranks): the check compares with ==, no tolerance.
float data_value(uint64_t seed, int64_t global_id, int64_t column);

// The communicator of a benchmark for the whole command: MPI up, then MpiComm (cpu) or, on the GPU (GPU =
// local rank modulo the visible GPUs; UserError without the CUDA backend), comm::make_device_comm(comm_kind):
// NcclComm ("nccl", one GPU per rank) or MpiComm with host staging ("mpi"). Device work is queued on the
// legacy default stream (kernels::Stream nullptr), which Buffer's copies are ordered with.
class BenchComm {
 public:
  BenchComm(const std::string& device, const std::string& comm_kind);
  ~BenchComm();
  BenchComm(const BenchComm&) = delete;
  BenchComm& operator=(const BenchComm&) = delete;
  comm::Communicator& get() { return *comm_; }
  const char* name() const { return name_; }
  // The host waits until all queued device work (kernels and communication) has finished; no-op on the CPU.
  void synchronize();

 private:
  comm::MpiSession session_;
  std::unique_ptr<comm::Communicator> comm_;
  const char* name_ = "MpiComm";
};

struct BenchRow {
  int64_t bytes = 0;     // the size column: what algbw divides
  int64_t count = 0;     // elements per rank (allreduce) or row width in floats (halo)
  double time_us = 0;    // slowest rank
  double mean_us = 0;    // mean over ranks
  double algbw_gbs = 0;  // bytes / time_us
  double busbw_gbs = 0;  // algbw x the operation's bus factor
  int64_t wrong = 0;     // summed over ranks
};

// Runs `iteration` warmup + iterations times with a barrier before the timed loop, then synchronises the
// device (as nccl-tests: the loop is queued back to back and timed to completion), and returns the slowest
// rank's and the mean rank's mean iteration time (microseconds) in row.time_us / row.mean_us.
void time_iterations(BenchComm& bench_comm, const CommBenchOptions& options,
                     const std::function<void()>& iteration, BenchRow* row);

// Rank 0 prints; `definitions` are printed as "#" lines above the column header.
void print_table_header(const comm::Communicator& comm, const std::string& title,
                        const std::vector<std::string>& definitions, const char* count_name);
void print_table_row(const comm::Communicator& comm, const BenchRow& row);
// Prints the closing lines and sets the exit code to 1 when any row had #wrong > 0.
void print_table_footer(const comm::Communicator& comm, const std::vector<BenchRow>& rows);

// Message sizes of a sweep: begin, begin x factor, ... up to end (inclusive), as nccl-tests' -b/-e/-f.
std::vector<int64_t> size_sweep(int64_t begin, int64_t end, int64_t factor);

// One allreduce size of `halogen bench allreduce` (`count` floats per rank), timed and checked; also used by
// `halogen bench profile` for the link figures.
BenchRow allreduce_row(BenchComm& bench_comm, const CommBenchOptions& options, int64_t count);

// Common command-line options of the two benchmarks.
void add_comm_bench_options(CLI::App* cmd, CommBenchOptions* options);

}  // namespace halogen::app
