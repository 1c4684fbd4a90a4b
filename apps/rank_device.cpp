#include "apps/rank_device.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "comm/device_comm.h"
#include "comm/mpi_comm.h"
#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/memory.h"
#include "kernels/device.h"
#include "train/collective_error.h"

namespace halogen::app {

void check_device_flags_before_mpi(const std::string& device, const std::string& comm) {
  // Loads the CUDA backend for --device cuda (before MPI, so that a missing one is one line from one process).
  if (device == "cuda") kernels::device::require_backend("--device cuda");
  if (!comm.empty() && comm != "mpi" && comm != "auto" && !kernels::device::backend_built()) {
    throw UserError(strformat("--comm %s needs --device cuda, and this build has no CUDA backend", comm.c_str()));
  }
}

std::unique_ptr<comm::Communicator> make_rank_comm(const std::string& device_flag, const std::string& comm_flag,
                                                   const comm::MpiSession& session, Device& device) {
  check_device_flags_before_mpi(device_flag, comm_flag);
  std::string name = device_flag;
  std::string comm_name = comm_flag.empty() ? "auto" : comm_flag;
  {
    comm::MpiComm setup;  // host collectives while the device is chosen
    if (name.empty()) {
      // Loads the CUDA backend when the build has one (0 devices when it cannot be loaded).
      double no_gpu = kernels::device::usable_device_count() > 0 ? 0.0 : 1.0;
      setup.allreduce_max(&no_gpu, 1);
      name = no_gpu > 0 ? "cpu" : "cuda";
    }
    HALOGEN_USER_CHECK(name == "cuda" || comm_flag.empty() || comm_flag == "mpi" || comm_flag == "auto",
                       "--comm %s needs --device cuda (CPU ranks always communicate with MPI)", comm_flag.c_str());
    if (name == "cuda") {
      std::string device_id;
      train::run_collectively(setup, [&] {
        kernels::device::initialise_device(session.local_rank());
        device_id = kernels::device::device_uuid();
      });
      // --comm auto: NCCL when every rank has its own GPU, host-staged MPI when ranks share one (collective).
      comm_name = comm::resolve_device_comm(comm_name, device_id);
      log::rank_line("device: " + kernels::device::device_description() + ", communicator " + comm_name +
                     (comm_flag.empty() || comm_flag == "auto" ? " (--comm auto)" : ""));
    }
  }
  if (name == "cuda") {
    device = Device::cuda;
    return comm::make_device_comm(comm_name);
  }
  device = Device::cpu;
  return std::make_unique<comm::MpiComm>();
}

void set_rank_threads(int threads, const comm::MpiSession& session) {
  // omp_get_num_procs() counts the CPUs of this process's affinity mask.
  const int usable_cores = std::max(1, omp_get_num_procs());
  if (threads <= 0 && std::getenv("OMP_NUM_THREADS") != nullptr) {
    threads = omp_get_max_threads();
    const int clamped = clamp_thread_count(threads, "OMP_NUM_THREADS");
    if (clamped != threads) omp_set_num_threads(threads = clamped);
  } else {
    threads = clamp_thread_count(threads, "--threads");
    if (threads <= 0) threads = std::max(1, usable_cores / std::max(1, session.local_size()));
    omp_set_num_threads(threads);
  }
  if (threads > usable_cores) {
    log::warn(strformat("%d OpenMP threads per rank, but rank 0 may run on only %d core(s): the threads will share "
                        "them (mpirun binds ranks to cores by default; use `mpirun --bind-to none` or "
                        "`--map-by slot:PE=%d`)",
                        threads, usable_cores, threads));
  }
}

namespace {

void run_rank_job_with(const std::function<comm::Communicator&()>& rank_comm, const std::function<void()>& job) {
  try {
    job();
  } catch (const train::PeerFailed&) {
    exit_code() = 2;  // the failing rank printed the reason
  } catch (const UserError& e) {
    std::fprintf(stderr, "halogen: error: %s\n", e.what());
    std::fflush(stderr);
    exit_code() = 2;
  } catch (const std::bad_alloc&) {
    // Outside a collective step (those report once for the job): this rank's line, then the job ends.
    log::rank_line("error: " + out_of_memory_message());
    rank_comm().abort(1);
  } catch (const std::exception& e) {
    log::rank_line(std::string("error: ") + e.what());
    rank_comm().abort(1);
  }
}

}  // namespace

void run_rank_job(std::unique_ptr<comm::Communicator>& rank_comm, const std::function<void()>& job) {
  run_rank_job_with([&]() -> comm::Communicator& { return *rank_comm; }, job);
}

void run_rank_job(comm::Communicator& comm, const std::function<void()>& job) {
  run_rank_job_with([&]() -> comm::Communicator& { return comm; }, job);
}

}  // namespace halogen::app
