// `halogen bench allreduce`: the gradient allreduce (in-place sum of one flat float buffer over all ranks) as
// the trainer issues it, through the engine's Communicator, in the nccl-tests all_reduce_perf format.
// Run under mpirun/srun: `mpirun -np 4 halogen bench allreduce --min-bytes 8 --max-bytes 64M`.
#include <memory>
#include <vector>

#include "apps/bench.h"
#include "apps/bench_comm.h"
#include "apps/commands.h"
#include "core/buffer.h"
#include "core/format.h"

namespace halogen::app {
namespace {

struct AllreduceOptions {
  int64_t min_bytes = 8;
  int64_t max_bytes = 64 << 20;
  int64_t step_factor = 2;
};

// One size: `count` floats per rank. Timed iterations reduce zeros (the sum of zeros stays zero, so repeated
// in-place sums never overflow; the cost of a float sum does not depend on the values); the check then
// refills rank r's element i with f(seed, r, i) and compares one allreduce with the sum over ranks.
}  // namespace

BenchRow allreduce_row(BenchComm& bench_comm, const CommBenchOptions& options, int64_t count) {
  comm::Communicator& comm = bench_comm.get();
  BenchRow row;
  row.count = count;
  row.bytes = count * static_cast<int64_t>(sizeof(float));
  Tensor data(count, comm.device());
  data.zero();
  time_iterations(
      bench_comm, options, [&] { comm.allreduce_sum(data.data(), count, nullptr); }, &row);

  std::vector<float> host(count);
  for (int64_t i = 0; i < count; ++i) host[i] = data_value(options.seed, comm.rank(), i);
  data.copy_from_host(host.data(), count);
  comm.allreduce_sum(data.data(), count, nullptr);
  data.copy_to_host(host.data());
  if (options.inject_error && comm.rank() == comm.size() - 1) host[count / 2] += 1.0f;
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0.0f;
    for (int r = 0; r < comm.size(); ++r) expected += data_value(options.seed, r, i);
    if (host[i] != expected) ++wrong;
  }
  comm.allreduce_sum(&wrong, 1);
  row.wrong = wrong;

  const double n = comm.size();
  row.algbw_gbs = row.bytes / (row.time_us * 1e3);
  row.busbw_gbs = row.algbw_gbs * 2.0 * (n - 1) / n;
  return row;
}

namespace {

void run(const AllreduceOptions& sizes, const CommBenchOptions& options) {
  BenchComm bench_comm(options.device, options.comm);
  comm::Communicator& comm = bench_comm.get();
  const std::vector<int64_t> byte_sizes = size_sweep(sizes.min_bytes, sizes.max_bytes, sizes.step_factor);
  print_table_header(
      comm,
      strformat("halogen bench allreduce: in-place float sum over %d ranks (%s, %s), warmup %d, iters %d",
                comm.size(), device_name(comm.device()), bench_comm.name(), options.warmup,
                options.iterations),
      {"size: bytes of the buffer on each rank (count floats x 4)",
       strformat("busbw = algbw x 2(n-1)/n = algbw x %.3f (n = %d): the bytes each rank moves in a ring",
                 2.0 * (comm.size() - 1) / comm.size(), comm.size()),
       "allreduce per byte of buffer, so busbw compares across rank counts (nccl-tests convention)"},
      "count");
  std::vector<BenchRow> rows;
  for (int64_t bytes : byte_sizes) {
    const int64_t count = std::max<int64_t>(bytes / static_cast<int64_t>(sizeof(float)), 1);
    rows.push_back(allreduce_row(bench_comm, options, count));
    print_table_row(comm, rows.back());
  }
  print_table_footer(comm, rows);
}

}  // namespace

void add_bench_allreduce(CLI::App& bench) {
  static AllreduceOptions sizes;
  static CommBenchOptions options;
  CLI::App* cmd = bench.add_subcommand(
      "allreduce", "Gradient allreduce (in-place float sum), nccl-tests table; run under mpirun/srun");
  cmd->add_option("--min-bytes", sizes.min_bytes, "Smallest buffer per rank (accepts K, M, G suffixes)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-bytes", sizes.max_bytes, "Largest buffer per rank (accepts K, M, G suffixes)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--step-factor", sizes.step_factor, "Multiply the size by this between rows (>= 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20))->capture_default_str();
  add_comm_bench_options(cmd, &options);
  cmd->callback([] { run(sizes, options); });
}

}  // namespace halogen::app
