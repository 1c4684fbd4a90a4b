#pragma once
// MPI for the lifetime of a command: initialises MPI (MPI_THREAD_FUNNELED: OpenMP threads never call MPI),
// records rank/size/local rank in core's RankInfo, and makes fatal errors call MPI_Abort so that one failing
// rank brings the whole job down. Finalises on destruction.
namespace halogen::comm {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool owns_ = false;
};

// Aborts every rank with `exit_code` (MPI_Abort when MPI is initialised, else exits this process).
[[noreturn]] void abort_all(int exit_code);

// abort_all for a thread that is not the one that initialised MPI (the NCCL watchdog). Under
// MPI_THREAD_FUNNELED (what MpiSession asks for: OpenMP threads never call MPI) only the main thread may call
// MPI, MPI_Abort included, so this ends this process alone with `exit_code` (stdout and stderr flushed) unless
// MPI provided MPI_THREAD_MULTIPLE. The launcher then ends the job: mpiexec aborts every rank when one exits
// non-zero, srun does with --kill-on-bad-exit=1 (scripts/slurm/*.sbatch), and a peer blocked on this rank is
// ended by its own watchdog within HALOGEN_COMM_TIMEOUT.
[[noreturn]] void abort_all_from_any_thread(int exit_code);

}  // namespace halogen::comm
