// main() for MPI test binaries: MPI up for the whole run, GoogleTest output from rank 0 only (other ranks
// still fail the job through their exit code, which mpiexec propagates).
#include <gtest/gtest.h>
#include <mpi.h>

#include "comm/mpi_session.h"

int main(int argc, char** argv) {
  halogen::comm::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (session.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int local_failed = RUN_ALL_TESTS();
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_failed && session.rank() == 0 && local_failed == 0) {
    std::fprintf(stderr, "a test failed on another rank\n");
  }
  return any_failed ? 1 : 0;
}
