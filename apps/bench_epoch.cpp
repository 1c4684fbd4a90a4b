// `halogen bench epoch DIR`: the time of one training epoch on a partition directory and its phases, under
// mpirun (one rank per part). Runs the real Trainer for --warmup + --epochs epochs and reports the mean of the
// last --epochs (max over ranks per epoch, as the train log does), once per overlap mode asked for:
//   overlap  ranks  threads  epoch_ms  spmm_ms  gemm_ms  halo_ms  exposed_ms  allreduce_ms  other_ms  exposed%
// exposed% = exposed / total halo time: the share of communication the local products did not hide.
// Then, on the CPU, a roofline line per row: the spmm phase's achieved GB/s (bytes by `bench spmm`'s model,
// kernels::work_count) against a STREAM copy (a gather reads a row and writes one: bench spmm's reference) and
// a triad, and the gemm phase's GFLOP/s against a square sgemm, all measured by rank 0 after the runs with the
// same threads (128 MiB arrays; 2048^3; --no-roofline skips them). Work and time are each the largest rank's,
// so with several ranks on one node each rank is held to the whole node's copy, triad and sgemm.
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/bench.h"
#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/rank_device.h"
#include "comm/mpi_comm.h"
#include "comm/mpi_session.h"
#include "core/buffer.h"
#include "core/log.h"
#include "train/collective_error.h"
#include "train/load.h"
#include "train/memory_estimate.h"
#include "train/trainer.h"

namespace halogen::app {
namespace {

// The model options are ModelFlags' (apps/model_options.h), as train's.
struct EpochBenchOptions : ModelFlags {
  std::string dir;
  int64_t epochs = 10;
  int64_t warmup = 2;
  int threads = 0;
  std::string overlap = "on";  // on | off | both
  bool roofline = true;
  bool row_normalize = false;
  std::string device;  // cpu | cuda; empty: as `halogen train` (apps/rank_device.h)
  std::string comm;    // auto | nccl | mpi (cuda only); empty: auto
  bool ignore_memory_check = false;
};

void run_epoch_bench(const EpochBenchOptions& o) {
  int argc = 0;
  char** argv = nullptr;
  check_device_flags_before_mpi(o.device, o.comm);
  set_host_prefault(true);  // as halogen train (core/buffer.h)
  comm::MpiSession session(&argc, &argv);
  set_rank_threads(o.threads, session);
  Device device = Device::cpu;
  std::unique_ptr<comm::Communicator> rank_comm = make_rank_comm(o.device, o.comm, session, device);
  comm::Communicator& comm = *rank_comm;
  run_rank_job(rank_comm, [&] {
    train::RankInput input = train::load_rank_input(comm, o.dir, o.row_normalize);
    train::TrainConfig base;  // both overlap modes: only config.model.overlap differs
    base.model = model_config(o);
    base.epochs = o.warmup + o.epochs;
    base.eval_every = base.epochs;  // one evaluation at the end (not timed in epoch_ms)
    base.print_epochs = false;
    base.device = device;
    // Memory planned before the model allocates it, as `halogen train` does.
    if (!o.ignore_memory_check) {
      train::run_collectively(
          comm, [&] { train::check_rank_memory_fits(base.model, input.shard, session.local_size(), device); },
          train::Report::lowest_failing_rank);
    }
    if (comm.rank() == 0) {
      std::printf("# halogen bench epoch: %s (%lld nodes, %lld edges, %lld features), %d ranks x %d threads, "
                  "device %s\n", o.dir.c_str(), (long long)input.meta.num_nodes, (long long)input.meta.num_edges,
                  (long long)input.meta.num_features, comm.size(), omp_get_max_threads(), device_name(device));
      std::printf("# model %s, %d layers, hidden %lld%s, dropout %g; mean of %lld epochs after %lld warm-up; ms are "
                  "max over ranks\n", o.model.c_str(), o.layers, (long long)o.hidden,
                  nn::model_summary(base.model).c_str(), o.dropout, (long long)o.epochs,
                  (long long)o.warmup);
      std::printf("%8s %6s %8s %10s %9s %9s %9s %11s %13s %9s %9s\n", "overlap", "ranks", "threads", "epoch_ms",
                  "spmm_ms", "gemm_ms", "halo_ms", "exposed_ms", "allreduce_ms", "other_ms", "exposed%");
    }
    const bool modes[2] = {true, false};
    std::vector<std::pair<bool, train::EpochRecord>> rows;  // (overlap, mean of the timed epochs)
    for (bool overlap : modes) {
      if ((overlap && o.overlap == "off") || (!overlap && o.overlap == "on")) continue;
      train::TrainConfig config = base;
      config.model.overlap = overlap;
      std::unique_ptr<train::Trainer> trainer;
      train::run_collectively(comm, [&] { trainer = std::make_unique<train::Trainer>(comm, input.shard, config); });
      const log::Level saved = log::level();
      log::set_level(log::Level::quiet);
      const train::TrainResult result = trainer->run();
      log::set_level(saved);
      train::EpochRecord mean;
      int64_t counted = 0;
      for (const train::EpochRecord& r : result.epochs) {
        if (r.epoch <= o.warmup) continue;
        ++counted;
        mean.epoch_ms += r.epoch_ms;
        mean.spmm_ms += r.spmm_ms;
        mean.gemm_ms += r.gemm_ms;
        mean.halo_ms += r.halo_ms;
        mean.halo_exposed_ms += r.halo_exposed_ms;
        mean.allreduce_ms += r.allreduce_ms;
        mean.other_ms += r.other_ms;
        mean.spmm_bytes += r.spmm_bytes;
        mean.gemm_flops += r.gemm_flops;
      }
      const double k = counted > 0 ? 1.0 / static_cast<double>(counted) : 0.0;
      if (comm.rank() == 0) {
        std::printf("%8s %6d %8d %10.2f %9.2f %9.2f %9.2f %11.2f %13.2f %9.2f %8.1f%%\n", overlap ? "on" : "off",
                    comm.size(), omp_get_max_threads(), mean.epoch_ms * k, mean.spmm_ms * k, mean.gemm_ms * k,
                    mean.halo_ms * k, mean.halo_exposed_ms * k, mean.allreduce_ms * k, mean.other_ms * k,
                    mean.halo_ms > 0 ? 100.0 * mean.halo_exposed_ms / mean.halo_ms : 0.0);
        std::fflush(stdout);
      }
      train::EpochRecord per_epoch;  // the roofline's figures, per epoch
      per_epoch.spmm_ms = mean.spmm_ms * k;
      per_epoch.gemm_ms = mean.gemm_ms * k;
      per_epoch.spmm_bytes = mean.spmm_bytes * k;
      per_epoch.gemm_flops = mean.gemm_flops * k;
      rows.push_back({overlap, per_epoch});
    }
    if (comm.rank() != 0 || !o.roofline) return;
    if (device != Device::cpu) {
      std::printf("# roofline: on the CPU only (the GPU's references: bench spmm --device cuda)\n");
      return;
    }
    // 128 MiB arrays: past any LLC
    const double copy = stream_copy_gbs(128), triad = stream_triad_gbs(128), sgemm = square_sgemm_gflops(2048, 5);
    for (const auto& [overlap, mean] : rows) {
      const double spmm_gbs = mean.spmm_ms > 0 ? mean.spmm_bytes / (mean.spmm_ms * 1e-3) / 1e9 : 0.0;
      const double gemm_gflops = mean.gemm_ms > 0 ? mean.gemm_flops / (mean.gemm_ms * 1e-3) / 1e9 : 0.0;
      std::printf("# roofline (overlap %s, per epoch): spmm %.2f GB moved in %.2f ms = %.1f GB/s, %.0f%% of a STREAM copy of "
                  "%.1f GB/s (%.0f%% of a triad of %.1f GB/s); gemm %.2f GFLOP in %.2f ms = %.1f GFLOP/s, %.0f%% of a "
                  "2048^3 sgemm's %.1f GFLOP/s\n",
                  overlap ? "on" : "off", mean.spmm_bytes * 1e-9, mean.spmm_ms, spmm_gbs, 100.0 * spmm_gbs / copy, copy,
                  100.0 * spmm_gbs / triad, triad, mean.gemm_flops * 1e-9, mean.gemm_ms, gemm_gflops,
                  100.0 * gemm_gflops / sgemm, sgemm);
    }
    std::fflush(stdout);
  });
}

}  // namespace

void add_bench_epoch(CLI::App& bench) {
  auto o = std::make_shared<EpochBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("epoch", "Epoch time and its phases on a partition directory (mpirun, one rank per part)");
  cmd->add_option("dir", o->dir, "Partition directory")->required();
  add_model_options(cmd, *o);
  cmd->add_flag("--ignore-memory-check", o->ignore_memory_check,
                "Run even when the planned memory per rank does not fit the node's (as halogen train)");
  cmd->add_option("--epochs", o->epochs, "Timed epochs")->check(positive())->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed epochs first")->check(non_negative())->capture_default_str();
  cmd->add_option("--threads", o->threads, "OpenMP threads per rank (default: OMP_NUM_THREADS, else cores / ranks)")
      ->check(non_negative());
  cmd->add_option("--overlap", o->overlap, "on, off or both (one row each)")
      ->check(CLI::IsMember({"on", "off", "both"}))->capture_default_str();
  cmd->add_flag("--row-normalize", o->row_normalize, "Row-normalise features first");
  cmd->add_option("--device", o->device, "cpu or cuda (default: as halogen train)")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--comm", o->comm,
                  "With --device cuda: auto (default: nccl when every rank has its own GPU, else mpi), nccl or mpi "
                  "(host-staged; ranks may share a GPU)")
      ->check(CLI::IsMember({"auto", "nccl", "mpi"}));
  cmd->add_flag("!--no-roofline", o->roofline,
                "Skip the roofline lines (and the STREAM copy, triad and sgemm they measure, a few seconds)");
  cmd->callback([o] {
    require_static_model(*o, "bench epoch");
    for (const std::string& unused : unused_model_options(*o)) log::warn(unused);
    run_epoch_bench(*o);
  });
}

}  // namespace halogen::app
