#include "comm/mpi_session.h"

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "comm/liveness.h"
#include "core/check.h"
#include "core/runtime.h"

namespace halogen::comm {

void abort_all(int exit_code) {
  PeerLiveness::announce_end();  // the peers are ended by the launcher, not reported lost
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    // MPI_Abort asks the launcher to end the job; when a peer's host is gone that request can block (PMIx_Abort
    // under srun waits for the step, whose other node no longer answers). This rank leaves within 5 s anyway.
    std::thread([exit_code] {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      std::_Exit(exit_code);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, exit_code);
  }
  std::_Exit(exit_code);
}

namespace {
int g_thread_level = MPI_THREAD_SINGLE;  // what MPI provided (MPI_Query_thread), for abort_all_from_any_thread
}  // namespace

void abort_all_from_any_thread(int exit_code) {
  if (g_thread_level == MPI_THREAD_MULTIPLE) abort_all(exit_code);
  PeerLiveness::announce_end();
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(exit_code);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    owns_ = true;
  }
  // Errors in MPI calls return codes (checked by MPI_CHECK, which aborts the job with the call site).
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Query_thread(&g_thread_level));
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  MPI_Comm node_comm;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_comm));
  MPI_CHECK(MPI_Comm_rank(node_comm, &local_rank_));
  MPI_CHECK(MPI_Comm_size(node_comm, &local_size_));
  MPI_CHECK(MPI_Comm_free(&node_comm));
  set_rank_info(RankInfo{rank_, size_, local_rank_});
  set_abort_handler([](int code) { abort_all(code); });
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace halogen::comm
