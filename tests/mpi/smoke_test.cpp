// MPI smoke test: the job has several ranks and a sum allreduce sees every one of them.
#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "core/check.h"
#include "core/runtime.h"

TEST(MpiSmoke, AllreduceSumsEveryRank) {
  int size = 0;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  ASSERT_GE(size, 2) << "run under mpiexec -np >= 2";
  const int rank = halogen::rank_info().rank;
  std::vector<double> values = {1.0, static_cast<double>(rank), static_cast<double>(rank * rank)};
  std::vector<double> sums(3, -1.0);
  MPI_CHECK(MPI_Allreduce(values.data(), sums.data(), 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
  EXPECT_EQ(sums[0], size);
  EXPECT_EQ(sums[1], size * (size - 1) / 2.0);
  EXPECT_EQ(sums[2], (size - 1) * size * (2 * size - 1) / 6.0);
}

TEST(MpiSmoke, RankInfoMatchesMpi) {
  int rank = -1, size = -1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  EXPECT_EQ(halogen::rank_info().rank, rank);
  EXPECT_EQ(halogen::rank_info().size, size);
  EXPECT_GE(halogen::rank_info().local_rank, 0);
  EXPECT_LT(halogen::rank_info().local_rank, size);
}
