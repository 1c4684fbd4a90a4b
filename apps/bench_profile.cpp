// `halogen bench profile -o FILE`: the device profile `halogen plan --device cpu` reads
// (apps/device_profile.h), measured on this machine with the code of the other benchmarks:
//   - bench spmm's GB/s on uniform random CSRs of --rows / 4 and --rows rows at widths 8..128: rates per size
//     of the dense operand, so what the caches give is in the rates and the profile's cache_bytes is 0 (on a
//     shared or virtualised CPU a power-law CSR's hubs gain nothing measurable from the nominal last-level
//     cache: bench spmm --graph rmat runs at the uniform CSR's time per entry, while a smaller operand runs
//     faster);
//   - its STREAM triad, bench gemm's three GCN-layer products, and the trainer's hidden-layer epilogue
//     (kernels::bias_relu_dropout, no mask; elements per second);
// for each thread count of --threads (default 1 and all cores). Under mpirun with 2 or more ranks also the
// link: bench allreduce's bus bandwidth at 64 MiB and its time at 8 bytes (latency per message = time /
// 2(n-1)), and the halo exchange's point-to-point bandwidth and the share of it that local work hides
// (measure_exchange). Rank 0 measures the compute rates alone while the other ranks sleep, then all ranks time
// the link; rank 0 writes FILE.
//   mpirun -np 2 halogen bench profile -o profiles/cpu-$(hostname).json
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench.h"
#include "apps/bench_comm.h"
#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "apps/device_profile.h"
#include "core/buffer.h"
#include "core/check.h"
#include "core/error.h"
#include "core/format.h"
#include "core/memory.h"
#include "core/runtime.h"
#include "core/timer.h"
#include "kernels/ops.h"

namespace halogen::app {
namespace {

struct ProfileOptions {
  std::string output;
  std::string name;
  std::string threads;  // comma-separated; empty: 1 and all cores
  int64_t rows = 1 << 19;
  double avg_degree = 16;
  std::vector<int64_t> widths = {8, 16, 32, 64, 128};
  int iterations = 3;
  int64_t triad_mib = 256;
};

// Elements per second (1e9/s) of the hidden-layer epilogue as the trainer runs it (bias, relu, dropout 0.5,
// no mask: nn/model.cpp) in place on a (rows, 64) matrix, best of 3.
double dropout_gelems(int64_t rows) {
  constexpr int64_t kWidth = 64;
  Tensor h(rows, kWidth, Device::cpu), bias(kWidth, Device::cpu);
  float* values = h.data();
  bias.zero();
  Buffer<int64_t> gid(rows);
  for (int64_t r = 0; r < rows; ++r) gid[r] = r;
  const kernels::EpilogueParams params{true, 0.5f, 1, 1};
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    // Fresh values each call (the epilogue works in place): relu keeps 2 in 3.
    for (int64_t k = 0; k < rows * kWidth; ++k) values[k] = (k % 3 == 0) ? -1.0f : 1.0f;
    const double start = wall_seconds();
    kernels::bias_relu_dropout(h.matrix(), Span<const float>{bias.data(), kWidth, Device::cpu},
                               Span<const int64_t>{gid.data(), rows, Device::cpu}, params, Matrix<float>{});
    if (i > 0) best = std::min(best, wall_seconds() - start);
  }
  return static_cast<double>(rows * kWidth) / best / 1e9;
}

std::vector<int> thread_counts(const std::string& text) {
  if (text.empty()) {
    const int cores = std::max(1, omp_get_num_procs());
    return cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
  }
  std::vector<int> counts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const int value = std::atoi(item.c_str());
    HALOGEN_USER_CHECK(value >= 1 && (counts.empty() || value > counts.back()),
                       "bench profile: --threads \"%s\" must be ascending positive counts such as 1,2",
                       text.c_str());
    counts.push_back(clamp_thread_count(value, "--threads"));
  }
  return counts;
}

// bench spmm's timings on a uniform random CSR of `rows` rows, one sample per width.
std::vector<train::SpmmSample> spmm_samples(int64_t rows, const ProfileOptions& options) {
  const SpmmTiming timing = spmm_timing(rows, options.avg_degree, options.widths, options.iterations, 1);
  std::vector<train::SpmmSample> samples;
  for (size_t i = 0; i < options.widths.size(); ++i)
    samples.push_back({timing.rows, timing.nnz, options.widths[i], timing.seconds[i]});
  return samples;
}

// One thread count's rates: bench spmm's uniform random CSR at a quarter of --rows and at --rows (two sizes
// of the dense operand X: at 2^17 rows and width 128 X is 64 MiB, at 2^19 256 MiB).
train::ComputeRates measure_rates(const ProfileOptions& options, int threads) {
  omp_set_num_threads(threads);
  train::ComputeRates rates;
  rates.threads = threads;
  rates.stream_gbs = stream_triad_gbs(options.triad_mib);
  rates.spmm_widths = options.widths;
  const std::vector<int64_t> sizes =
      options.rows >= 4 ? std::vector<int64_t>{options.rows / 4, options.rows} : std::vector<int64_t>{options.rows};
  for (int64_t rows : sizes) {
    rates.spmm_rows.push_back(rows);
    for (const train::SpmmSample& sample : spmm_samples(rows, options))
      rates.spmm_gbs.push_back(train::spmm_sample_gbs(sample));
  }
  rates.gemm_gflops = gemm_layer_gflops(options.rows, 128, 128, options.iterations);
  rates.dropout_gelems = dropout_gelems(options.rows);
  std::printf("# threads %d: triad %.1f GB/s, spmm GB/s", threads, rates.stream_gbs);
  for (size_t j = 0; j < rates.spmm_rows.size(); ++j) {
    std::printf(" (%lld rows)", static_cast<long long>(rates.spmm_rows[j]));
    for (size_t i = 0; i < rates.spmm_widths.size(); ++i)
      std::printf(" w%lld %.1f", static_cast<long long>(rates.spmm_widths[i]),
                  rates.spmm_gbs[j * rates.spmm_widths.size() + i]);
  }
  std::printf(", gemm %.1f GFLOP/s, dropout %.3f G/s\n", rates.gemm_gflops, rates.dropout_gelems);
  std::fflush(stdout);
  return rates;
}

// Waits for every rank at a barrier without spinning a core (the other ranks sleep while rank 0 measures).
void sleeping_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  int done = 0;
  while (true) {
    MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The halo exchange's point-to-point bandwidth and the share of it that local work hides here, as
// DistributedAdjacency overlaps them: ranks 2k and 2k+1 swap `bytes` (MPI_Irecv + MPI_Isend of floats, then
// MPI_Waitall) while each runs one thread of memory-bound work (triad passes) lasting about twice the exchange.
// share = 1 - (time of exchange + work - time of the work alone) / time of the exchange alone, clamped to
// [0, 1]; each time the best of 3; rank 0's pair's figure on every rank. With MPI over shared memory the copies run on the ranks' own cores inside MPI
// calls, so this is well below 1.
struct ExchangeFigures {
  double share = 0, gbs = 0;  // share hidden; bytes exchanged alone per second per rank, GB/s
};
ExchangeFigures measure_exchange(int64_t bytes) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const int peer = (rank ^ 1) < size ? (rank ^ 1) : -1;
  const int count = static_cast<int>(bytes / 4);
  std::vector<float> send(static_cast<size_t>(count), 1.0f), receive(static_cast<size_t>(count), 0.0f);
  const size_t work_elements = size_t{4} << 20;  // 3 x 32 MiB of doubles: beyond the caches
  std::vector<double> a(work_elements, 0.0), b(work_elements, 1.0), c(work_elements, 2.0);
  auto work = [&](int passes) {
    for (int pass = 0; pass < passes; ++pass) {
      double* __restrict__ x = a.data();
      const double* __restrict__ y = b.data();
      const double* __restrict__ z = c.data();
      for (size_t i = 0; i < work_elements; ++i) x[i] = y[i] + 0.5 * z[i];
    }
  };
  auto exchange = [&](int passes) {
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (peer >= 0) {
      MPI_CHECK(MPI_Irecv(receive.data(), count, MPI_FLOAT, peer, 7, MPI_COMM_WORLD, &requests[0]));
      MPI_CHECK(MPI_Isend(send.data(), count, MPI_FLOAT, peer, 7, MPI_COMM_WORLD, &requests[1]));
    }
    work(passes);
    MPI_CHECK(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
  };
  auto best_of_3 = [&](const auto& step) {
    double best = 1e30;
    for (int i = 0; i < 3; ++i) {
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const double start = wall_seconds();
      step();
      best = std::min(best, wall_seconds() - start);
    }
    return best;
  };
  exchange(0);  // connections and registrations
  const double alone = best_of_3([&] { exchange(0); });
  const double pass = best_of_3([&] { work(1); });
  // Rank 0's pass count on every rank, so that the pairs work alike.
  int passes = static_cast<int>(std::ceil(2.0 * alone / std::max(pass, 1e-6)));
  passes = std::max(1, std::min(passes, 200));
  MPI_CHECK(MPI_Bcast(&passes, 1, MPI_INT, 0, MPI_COMM_WORLD));
  const double work_alone = best_of_3([&] { work(passes); });
  const double together = best_of_3([&] { exchange(passes); });
  double figures[2] = {std::clamp(1.0 - (together - work_alone) / alone, 0.0, 1.0),
                       static_cast<double>(bytes) / alone / 1e9};
  MPI_CHECK(MPI_Bcast(figures, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (rank == 0)
    std::printf("# exchange: %.0f MiB each way alone %.1f ms (%.2f GB/s); work alone %.1f ms, with the exchange "
                "%.1f ms: share hidden %.2f\n",
                static_cast<double>(bytes) / (1 << 20), alone * 1e3, figures[1], work_alone * 1e3,
                together * 1e3, figures[0]);
  return {figures[0], figures[1]};
}

void run_profile(const ProfileOptions& options) {
  HALOGEN_USER_CHECK(options.rows > 0 && options.rows < (int64_t{1} << 31) && options.iterations > 0,
                     "bench profile: --rows must be in [1, 2^31) and --iters > 0");
  const int64_t smallest = options.rows >= 4 ? options.rows / 4 : options.rows;  // measure_rates' sizes
  HALOGEN_USER_CHECK(options.avg_degree >= 0 && 2 * options.avg_degree <= static_cast<double>(smallest),
                     "bench profile: --avg-degree %g must be in [0, %lld] (half the %lld rows of the smaller "
                     "matrix, --rows / 4: rows hold up to twice the mean)", options.avg_degree,
                     (long long)(smallest / 2), (long long)smallest);
  for (size_t i = 0; i < options.widths.size(); ++i)
    HALOGEN_USER_CHECK(options.widths[i] > 0 && (i == 0 || options.widths[i] > options.widths[i - 1]),
                       "bench profile: --width: widths must be ascending positive integers (as `halogen plan` "
                       "reads them)");
  const std::vector<int> threads = thread_counts(options.threads);
  BenchComm bench_comm("cpu", "mpi");
  comm::Communicator& comm = bench_comm.get();
  train::DeviceProfile profile;
  profile.name = options.name.empty() ? "cpu-" + host_name() : options.name;
  profile.kind = "cpu";
  profile.calibrated = true;
  profile.memory_bytes = available_memory_bytes();
  profile.cache_shared = true;
  if (comm.rank() == 0) {
    std::printf(
        "# halogen bench profile: %s, %d rank(s); spmm on a uniform random CSR of %lld rows, degree %g\n",
        profile.name.c_str(), comm.size(), static_cast<long long>(options.rows), options.avg_degree);
    for (int t : threads) profile.rates.push_back(measure_rates(options, t));
  }
  sleeping_barrier();
  omp_set_num_threads(1);
  if (comm.size() > 1) {
    CommBenchOptions comm_options;
    comm_options.iterations = 10;
    comm_options.warmup = 3;
    const BenchRow small = allreduce_row(bench_comm, comm_options, 2);
    const BenchRow large = allreduce_row(bench_comm, comm_options, (int64_t{64} << 20) / 4);
    HALOGEN_USER_CHECK(small.wrong == 0 && large.wrong == 0,
                       "bench profile: the allreduce gave wrong results");
    profile.link_gbs = large.busbw_gbs;
    profile.link_latency_us = small.time_us / (2.0 * (comm.size() - 1));
    profile.overlap = true;
    const ExchangeFigures exchange = measure_exchange(int64_t{32} << 20);
    profile.overlap_share = exchange.share;
    profile.exchange_gbs = exchange.gbs;
  }
  profile.source =
      strformat("halogen bench profile on %s, %d rank(s)%s", host_name().c_str(), comm.size(),
                comm.size() > 1 ? "" : " (no link figures: run under mpirun -np 2 to plan P > 1)");
  if (comm.rank() == 0) {
    if (comm.size() > 1)
      std::printf("# link (allreduce over %d ranks): bus bandwidth %.2f GB/s at 64 MiB, latency %.1f us\n",
                  comm.size(), profile.link_gbs, profile.link_latency_us);
    write_device_profile(profile, options.output);
    std::printf("# wrote %s\n", options.output.c_str());
  }
}

}  // namespace

void add_bench_profile(CLI::App& bench) {
  static ProfileOptions options;
  CLI::App* cmd = bench.add_subcommand(
      "profile",
      "Measure a CPU device profile for `halogen plan` (JSON); run under mpirun -np 2 for the link");
  cmd->add_option("-o,--output", options.output, "Profile file to write (e.g. profiles/cpu-HOST.json)")
      ->required();
  cmd->add_option("--name", options.name, "Profile name (default cpu-<host>)");
  cmd->add_option("--threads", options.threads,
                  "Thread counts to measure, comma-separated (default 1 and all cores)");
  cmd->add_option("--rows", options.rows, "Rows of the SpMM matrix and of the GEMM")
      ->check(positive())->capture_default_str();
  cmd->add_option("--avg-degree", options.avg_degree, "Mean row length of the SpMM matrix (at most --rows / 8)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--width", options.widths, "SpMM widths (ascending)")->check(positive())->capture_default_str();
  cmd->add_option("--iters", options.iterations, "Timed calls per measurement")->check(positive())->capture_default_str();
  cmd->add_option("--triad-mib", options.triad_mib, "MiB per triad array")->check(positive())->capture_default_str();
  cmd->callback([] { run_profile(options); });
}

}  // namespace halogen::app
