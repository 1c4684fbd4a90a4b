// `halogen bench halo`: the halo exchange of training (comm::HaloExchange over the engine's Communicator) on
// a real partition directory or a synthetic plan, in the nccl-tests style: one row per row width.
//   mpirun -np 4 halogen bench halo parts.p4/            the plan of each rank's shard (part-%05d.h5)
//   mpirun -np 4 halogen bench halo --pattern ring       synthetic: halo = neighbour ranks' boundary rows
//   mpirun -np 4 halogen bench halo --pattern random     synthetic: halo = random rows of all other ranks
// --reverse measures the backward exchange instead (partial sums sent back to owners and scatter-added).
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "apps/bench.h"
#include "apps/cli_checks.h"
#include "apps/bench_comm.h"
#include "apps/commands.h"
#include "apps/rank_device.h"
#include "comm/halo_exchange.h"
#include "core/buffer.h"
#include "core/format.h"
#include "core/rng.h"
#include "graph/shard.h"
#include "io/part_file.h"
#include "train/collective_error.h"

namespace halogen::app {
namespace {

struct HaloOptions {
  std::string partition_dir;     // empty: synthetic plan
  std::string pattern = "ring";  // ring | random
  int64_t rows_per_rank = 100000;
  int64_t halo_rows = 10000;
  int64_t min_width = 1;
  int64_t max_width = 256;
  int64_t step_factor = 2;
  bool reverse = false;
};

// Synthetic plans over contiguous ownership: rank q owns global ids [q R, (q+1) R). halo_of(q) lists the halo
// of rank q ascending, hence grouped by owner as a shard requires. Every rank can compute every rank's halo
// (deterministic in the seed), which is how the senders know what to send.
std::vector<int64_t> synthetic_halo(const HaloOptions& options, uint64_t seed, int size, int q) {
  const int64_t rows = options.rows_per_rank;
  std::set<int64_t> halo;
  if (size == 1) return {};
  if (options.pattern == "ring") {
    // The last H rows of the left neighbour and the first H rows of the right one (a 1-D domain
    // decomposition).
    const int left = (q + size - 1) % size, right = (q + 1) % size;
    const int64_t h = std::min(options.halo_rows, rows);
    for (int64_t i = 0; i < h; ++i) {
      halo.insert(left * rows + rows - 1 - i);
      halo.insert(right * rows + i);
    }
  } else {
    // halo_rows draws, uniform over the vertices of the other ranks, duplicates merged.
    const int64_t others = (size - 1) * rows;
    const uint64_t stream = rng::stream_id(rng::kBenchData, 1, static_cast<uint32_t>(q));
    for (int64_t i = 0; i < options.halo_rows; ++i) {
      int64_t gid = static_cast<int64_t>(rng::uniform_u64(seed, stream, i) % others);
      if (gid >= q * rows) gid += rows;  // skip our own range
      halo.insert(gid);
    }
  }
  return {halo.begin(), halo.end()};
}

graph::Shard synthetic_shard(const HaloOptions& options, uint64_t seed, int size, int rank) {
  HALOGEN_USER_CHECK(options.pattern == "ring" || options.pattern == "random",
                     "--pattern must be ring or random, got '%s'", options.pattern.c_str());
  HALOGEN_USER_CHECK(options.rows_per_rank > 0 && options.rows_per_rank < (int64_t{1} << 31),
                     "--rows-per-rank must be in [1, 2^31), got %lld",
                     static_cast<long long>(options.rows_per_rank));
  HALOGEN_USER_CHECK(options.halo_rows >= 0, "--halo-rows must be >= 0");
  const int64_t rows = options.rows_per_rank;
  graph::Shard shard;
  shard.part = rank;
  shard.num_parts = size;
  shard.global_num_nodes = rows * size;
  shard.owned_gid.resize(rows);
  for (int64_t i = 0; i < rows; ++i) shard.owned_gid[i] = rank * rows + i;
  shard.indptr.assign(rows + 1, 0);
  shard.halo_gid = synthetic_halo(options, seed, size, rank);
  shard.plan.recv_offsets.assign(size + 1, 0);
  for (int64_t gid : shard.halo_gid) ++shard.plan.recv_offsets[gid / rows + 1];
  shard.plan.send_offsets.assign(size + 1, 0);
  for (int q = 0; q < size; ++q) {
    if (q != rank) {
      for (int64_t gid : synthetic_halo(options, seed, size, q)) {
        if (gid / rows == rank) shard.plan.send_idx.push_back(static_cast<int32_t>(gid - rank * rows));
      }
    }
    shard.plan.recv_offsets[q + 1] += shard.plan.recv_offsets[q];
    shard.plan.send_offsets[q + 1] = static_cast<int64_t>(shard.plan.send_idx.size());
  }
  return shard;
}

struct PlanSummary {
  double max_send_rows = 0, max_recv_rows = 0, max_busiest_rows = 0, total_halo_rows = 0;
  double max_peers = 0;
};

PlanSummary summarize(comm::Communicator& comm, const graph::Shard& shard) {
  PlanSummary s;
  const double send = static_cast<double>(shard.plan.send_idx.size());
  const double recv = static_cast<double>(shard.num_halo());
  double peers = 0;
  for (int q = 0; q < comm.size(); ++q) {
    if (shard.plan.recv_offsets[q + 1] > shard.plan.recv_offsets[q] ||
        shard.plan.send_offsets[q + 1] > shard.plan.send_offsets[q])
      ++peers;
  }
  double maxima[4] = {send, recv, std::max(send, recv), peers};
  comm.allreduce_max(maxima, 4);
  s.max_send_rows = maxima[0];
  s.max_recv_rows = maxima[1];
  s.max_busiest_rows = maxima[2];
  s.max_peers = maxima[3];
  s.total_halo_rows = recv;
  comm.allreduce_sum(&s.total_halo_rows, 1);
  return s;
}

// One width: x holds (n_own + n_halo) rows of `width` floats, owned rows f(seed, gid, c). Forward: the halo
// rows must arrive equal to f(seed, halo gid, c). Reverse: every rank sends partial rows f(seed, halo gid, c)
// back; an owner's row i must become the sum of one copy per rank that holds it as halo.
BenchRow run_width(BenchComm& bench_comm, comm::HaloExchange& exchange, const graph::Shard& shard,
                   const HaloOptions& halo_options, const CommBenchOptions& options, int64_t width,
                   int64_t busiest_rows) {
  comm::Communicator& comm = bench_comm.get();
  const int64_t n_own = shard.num_owned(), n_halo = shard.num_halo();
  const Device device = comm.device();
  BenchRow row;
  row.count = width;
  row.bytes = busiest_rows * width * static_cast<int64_t>(sizeof(float));

  std::vector<float> host_x((n_own + n_halo) * width);
  for (int64_t i = 0; i < n_own; ++i)
    for (int64_t c = 0; c < width; ++c)
      host_x[i * width + c] = data_value(options.seed, shard.owned_gid[i], c);
  std::vector<float> host_partial(n_halo * width);
  for (int64_t j = 0; j < n_halo; ++j)
    for (int64_t c = 0; c < width; ++c)
      host_partial[j * width + c] = data_value(options.seed, shard.halo_gid[j], c);

  Tensor x(n_own + n_halo, width, device);
  Tensor partial(n_halo, width, device);
  Tensor grad_own(n_own, width, device);
  x.copy_from_host(host_x.data(), x.size());
  partial.copy_from_host(host_partial.data(), partial.size());
  grad_own.zero();

  auto forward = [&] {
    exchange.start_forward(x.matrix());
    exchange.finish_forward();
  };
  auto reverse = [&] {
    exchange.start_reverse(partial.matrix());
    exchange.finish_reverse(grad_own.matrix());
  };
  if (halo_options.reverse)
    time_iterations(bench_comm, options, reverse, &row);
  else
    time_iterations(bench_comm, options, forward, &row);

  int64_t wrong = 0;
  if (!halo_options.reverse) {
    // Halo rows start as a sentinel that no f value equals, so a row that never arrives counts as wrong.
    for (int64_t k = n_own * width; k < (n_own + n_halo) * width; ++k) host_x[k] = 0.5f;
    x.copy_from_host(host_x.data(), x.size());
    forward();
    x.copy_to_host(host_x.data());
    if (options.inject_error && comm.rank() == comm.size() - 1 && n_halo > 0) host_x[n_own * width] += 1.0f;
    for (int64_t j = 0; j < n_halo; ++j)
      for (int64_t c = 0; c < width; ++c)
        if (host_x[(n_own + j) * width + c] != data_value(options.seed, shard.halo_gid[j], c)) ++wrong;
  } else {
    grad_own.zero();
    reverse();
    std::vector<float> host_grad(n_own * width);
    grad_own.copy_to_host(host_grad.data());
    if (options.inject_error && comm.rank() == comm.size() - 1 && n_own > 0) host_grad[0] += 1.0f;
    std::vector<int32_t> copies(n_own, 0);
    for (int32_t i : shard.plan.send_idx) ++copies[i];
    for (int64_t i = 0; i < n_own; ++i)
      for (int64_t c = 0; c < width; ++c) {
        // Sum of identical addends: the same in any order, so == is exact.
        const float v = data_value(options.seed, shard.owned_gid[i], c);
        float expected = 0.0f;
        for (int32_t k = 0; k < copies[i]; ++k) expected += v;
        if (host_grad[i * width + c] != expected) ++wrong;
      }
  }
  comm.allreduce_sum(&wrong, 1);
  row.wrong = wrong;
  row.algbw_gbs = row.time_us > 0 ? row.bytes / (row.time_us * 1e3) : 0.0;
  row.busbw_gbs = row.algbw_gbs;
  return row;
}

void run_on_ranks(BenchComm& bench_comm, const HaloOptions& halo_options, const CommBenchOptions& options);

void run(const HaloOptions& halo_options, const CommBenchOptions& options) {
  BenchComm bench_comm(options.device, options.comm);
  comm::Communicator& comm = bench_comm.get();
  run_rank_job(comm, [&] { run_on_ranks(bench_comm, halo_options, options); });
}

void run_on_ranks(BenchComm& bench_comm, const HaloOptions& halo_options, const CommBenchOptions& options) {
  comm::Communicator& comm = bench_comm.get();
  graph::Shard shard;
  std::string source;
  if (!halo_options.partition_dir.empty()) {
    // Every rank reads its own shard; one that cannot (missing, damaged) stops them all, not a hang.
    train::run_collectively(comm, [&] {
      const io::PartitionMeta meta = io::read_partition_meta(halo_options.partition_dir);
      HALOGEN_USER_CHECK(meta.num_parts == comm.size(), "%s: %d parts but %d ranks; run with -np %d",
                         halo_options.partition_dir.c_str(), meta.num_parts, comm.size(), meta.num_parts);
      shard = io::read_shard(halo_options.partition_dir, comm.rank());
      source = strformat("partition %s (%s, %lld vertices)", halo_options.partition_dir.c_str(),
                         meta.method.c_str(), static_cast<long long>(meta.num_nodes));
    }, train::Report::lowest_failing_rank);
  } else {
    shard = synthetic_shard(halo_options, options.seed, comm.size(), comm.rank());
    source = strformat(
        halo_options.pattern == "ring"
            ? "synthetic ring plan: %lld rows per rank, halo = %lld boundary rows of each neighbour"
            : "synthetic random plan: %lld rows per rank, halo = %lld uniform draws from other ranks",
        static_cast<long long>(halo_options.rows_per_rank), static_cast<long long>(halo_options.halo_rows));
  }
  const PlanSummary plan = summarize(comm, shard);
  const std::vector<int64_t> widths =
      size_sweep(halo_options.min_width, halo_options.max_width, halo_options.step_factor);
  comm::HaloExchange exchange(comm, shard.plan, shard.num_owned(), widths.back());

  print_table_header(
      comm,
      strformat("halogen bench halo: %s exchange over %d ranks (%s, %s + HaloExchange), warmup %d, iters %d",
                halo_options.reverse ? "reverse (scatter-add)" : "forward", comm.size(),
                device_name(comm.device()), bench_comm.name(), options.warmup, options.iterations),
      {source,
       strformat("plan: %.0f halo rows in all; per rank at most: %.0f rows sent, %.0f received, peers %.0f",
                 plan.total_halo_rows, plan.max_send_rows, plan.max_recv_rows, plan.max_peers),
       "width: floats per row; size = the busiest rank's max(rows sent, rows received) x width x 4 bytes",
       "busbw = algbw: point-to-point, each byte crosses one link once, and size is the busiest rank's"},
      "width");
  std::vector<BenchRow> rows;
  for (int64_t width : widths) {
    rows.push_back(run_width(bench_comm, exchange, shard, halo_options, options, width,
                             static_cast<int64_t>(plan.max_busiest_rows)));
    print_table_row(comm, rows.back());
  }
  print_table_footer(comm, rows);
}

}  // namespace

void add_bench_halo(CLI::App& bench) {
  static HaloOptions halo_options;
  static CommBenchOptions options;
  CLI::App* cmd = bench.add_subcommand(
      "halo",
      "Halo exchange of a partition directory or a synthetic plan, nccl-tests table; run under mpirun/srun");
  cmd->add_option(
      "partition_dir", halo_options.partition_dir,
      "Partition directory (from `halogen partition`, as many parts as ranks); none: synthetic plan");
  cmd->add_option("--pattern", halo_options.pattern, "Synthetic plan: ring | random")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "random"}));
  cmd->add_option("--rows-per-rank", halo_options.rows_per_rank, "Synthetic plan: owned rows per rank")
      ->check(positive())->capture_default_str();
  cmd->add_option("--halo-rows", halo_options.halo_rows,
                  "Synthetic plan: ring: rows taken from each neighbour (at most --rows-per-rank); random: rows "
                  "drawn per rank")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--min-width", halo_options.min_width, "Smallest row width (floats)")
      ->check(positive())->capture_default_str();
  cmd->add_option("--max-width", halo_options.max_width, "Largest row width (floats)")
      ->check(positive())->capture_default_str();
  cmd->add_option("--step-factor", halo_options.step_factor, "Multiply the width by this between rows (>= 2)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20))->capture_default_str();
  cmd->add_flag("--reverse", halo_options.reverse,
                "Measure the reverse exchange (backward pass scatter-add)");
  add_comm_bench_options(cmd, &options);
  cmd->callback([] {
    // Checks of the options alone, before MPI: every rank meets them alike and main prints them once.
    HALOGEN_USER_CHECK(halo_options.min_width <= halo_options.max_width,
                       "--min-width %lld is above --max-width %lld", (long long)halo_options.min_width,
                       (long long)halo_options.max_width);
    HALOGEN_USER_CHECK(!halo_options.partition_dir.empty() || halo_options.pattern != "ring" ||
                           halo_options.halo_rows <= halo_options.rows_per_rank,
                       "--halo-rows %lld: a ring takes at most --rows-per-rank (%lld) rows of each neighbour",
                       (long long)halo_options.halo_rows, (long long)halo_options.rows_per_rank);
    run(halo_options, options);
  });
}

}  // namespace halogen::app
