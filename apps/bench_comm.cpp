#include "apps/bench_comm.h"

#include <algorithm>
#include <cstdio>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "comm/device_comm.h"
#include "comm/mpi_comm.h"
#include "core/error.h"
#include "core/format.h"
#include "core/rng.h"
#include "core/timer.h"
#include "kernels/device.h"

namespace halogen::app {

float data_value(uint64_t seed, int64_t global_id, int64_t column) {
  // Columns of one id are consecutive counters; 2^24 columns per id is far beyond any row width.
  const uint64_t index = (static_cast<uint64_t>(global_id) << 24) + static_cast<uint64_t>(column);
  const uint32_t bits = rng::bits(seed, rng::stream_id(rng::kBenchData), index).v[0];
  return static_cast<float>(static_cast<int32_t>(bits % 1024u) - 512);
}

BenchComm::BenchComm(const std::string& device, const std::string& comm_kind) : session_(nullptr, nullptr) {
  if (device == "cpu") {
    comm_ = std::make_unique<comm::MpiComm>();
    return;
  }
  HALOGEN_USER_CHECK(device == "cuda", "--device must be cpu or cuda, got '%s'", device.c_str());
  kernels::device::initialise_device(session_.local_rank());
  // auto: NCCL when every rank has its own GPU, host-staged MPI when ranks share one (NCCL refuses that).
  const std::string kind = comm::resolve_device_comm(comm_kind, kernels::device::device_uuid());
  comm_ = comm::make_device_comm(kind);
  name_ = kind == "nccl" ? "NcclComm" : "MpiComm with host staging";
}

BenchComm::~BenchComm() = default;

void BenchComm::synchronize() {
  if (comm_->device() == Device::cuda) kernels::device::synchronize_stream(nullptr);
}

void time_iterations(BenchComm& bench_comm, const CommBenchOptions& options,
                     const std::function<void()>& iteration, BenchRow* row) {
  comm::Communicator& comm = bench_comm.get();
  for (int i = 0; i < options.warmup; ++i) iteration();
  bench_comm.synchronize();
  comm.barrier();
  Stopwatch watch;
  for (int i = 0; i < options.iterations; ++i) iteration();
  bench_comm.synchronize();
  const double mean_us = 1e6 * watch.seconds() / std::max(options.iterations, 1);
  double slowest = mean_us, total = mean_us;
  comm.allreduce_max(&slowest, 1);
  comm.allreduce_sum(&total, 1);
  row->time_us = slowest;
  row->mean_us = total / comm.size();
}

void print_table_header(const comm::Communicator& comm, const std::string& title,
                        const std::vector<std::string>& definitions, const char* count_name) {
  if (comm.rank() != 0) return;
  std::printf("# %s\n", title.c_str());
  for (const std::string& line : definitions) std::printf("#   %s\n", line.c_str());
  std::printf(
      "#   time(us): slowest rank's mean iteration time; mean(us): mean over ranks; algbw = size / time;\n");
  std::printf(
      "#   #wrong: elements (all ranks) that differ from the value made on purpose, f(seed, global id,\n");
  std::printf("#   column) = Philox integer in [-512, 512); must be 0.\n");
  std::printf("#\n");
  std::printf("# %12s %10s %10s %10s %11s %11s %8s\n", "size(B)", count_name, "time(us)", "mean(us)",
              "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  std::fflush(stdout);
}

void print_table_row(const comm::Communicator& comm, const BenchRow& row) {
  if (comm.rank() != 0) return;
  std::printf("  %12lld %10lld %10.2f %10.2f %11.3f %11.3f %8lld\n", static_cast<long long>(row.bytes),
              static_cast<long long>(row.count), row.time_us, row.mean_us, row.algbw_gbs, row.busbw_gbs,
              static_cast<long long>(row.wrong));
  std::fflush(stdout);
}

void print_table_footer(const comm::Communicator& comm, const std::vector<BenchRow>& rows) {
  int64_t wrong = 0;
  double busbw_sum = 0;
  for (const BenchRow& row : rows) {
    wrong += row.wrong;
    busbw_sum += row.busbw_gbs;
  }
  if (comm.rank() == 0) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
                wrong == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %.3f GB/s\n", rows.empty() ? 0.0 : busbw_sum / rows.size());
    std::fflush(stdout);
  }
  if (wrong != 0) exit_code() = 1;
}

std::vector<int64_t> size_sweep(int64_t begin, int64_t end, int64_t factor) {
  HALOGEN_USER_CHECK(begin > 0 && end >= begin, "sizes: need 0 < begin <= end, got %lld..%lld",
                     static_cast<long long>(begin), static_cast<long long>(end));
  HALOGEN_USER_CHECK(factor >= 2, "--step-factor must be >= 2, got %lld", static_cast<long long>(factor));
  std::vector<int64_t> sizes;
  for (int64_t size = begin; size <= end; size *= factor) {
    sizes.push_back(size);
    if (size > end / factor) break;
  }
  return sizes;
}

void add_comm_bench_options(CLI::App* cmd, CommBenchOptions* options) {
  cmd->add_option("--device", options->device,
                  "cpu (MpiComm, host buffers) or cuda (device buffers, see --comm)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--comm", options->comm,
                  "With --device cuda: nccl (NcclComm), mpi (MpiComm staging through host memory) or auto "
                  "(nccl unless ranks share a GPU)")
      ->check(CLI::IsMember({"auto", "nccl", "mpi"}))
      ->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Untimed iterations before each size")
      ->capture_default_str()
      ->check(non_negative());
  cmd->add_option("--iters", options->iterations, "Timed iterations per size")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--seed", options->seed, "Seed of the checked data")->check(seed_value())->capture_default_str();
  cmd->add_flag("--inject-error", options->inject_error,
                "Corrupt one received element on the last rank (shows that the check counts; exits 1)");
}

}  // namespace halogen::app
