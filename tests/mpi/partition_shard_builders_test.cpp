// One shard builder for every path (partition/shard_builder.h): `--method ptscotch` on K = 2 and 4 processes
// writes, for each part, exactly the shard that the whole-graph path (build_halo_plan + build_shard, as
// METIS, random and contiguous use it) makes from the same assignment - every dataset equal and the part
// files equal byte for byte - on a weighted graph with features, labels, splits, a self-loop and isolated
// vertices, for P below, equal to and above K, with the default --vertex-order rcm applied on both paths.
// Also the one fail-together helper (core/fail_together.h) through both of its transports: an MPI_Comm
// (partition's collectively) and a comm::Communicator (train::run_collectively).
#include <gtest/gtest.h>
#include <mpi.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "comm/mpi_comm.h"
#include "io/graph_file.h"
#include "io/part_file.h"
#include "partition/halo_plan.h"
#include "partition/ptscotch_partition.h"
#include "partition/slice_comm.h"
#include "partition/test_graphs.h"
#include "train/collective_error.h"

namespace halogen {
namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// A directory every rank agrees on: process 0's, broadcast.
std::string shared_dir(const partition_test::TempDir& mine) {
  std::string path = mine.path();
  int length = static_cast<int>(path.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  path.resize(static_cast<size_t>(length));
  MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every dataset and attribute of a part file, compared one by one (the byte comparison below says the same at
// once; this says which field differs).
void expect_same_shard(const graph::Shard& a, const graph::Shard& b) {
  EXPECT_EQ(a.part, b.part);
  EXPECT_EQ(a.num_parts, b.num_parts);
  EXPECT_EQ(a.global_num_nodes, b.global_num_nodes);
  EXPECT_EQ(a.global_num_edges, b.global_num_edges);
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(a.num_features, b.num_features);
  EXPECT_EQ(a.graph_name, b.graph_name);
  EXPECT_EQ(a.owned_gid, b.owned_gid);
  EXPECT_EQ(a.halo_gid, b.halo_gid);
  EXPECT_EQ(a.plan.recv_offsets, b.plan.recv_offsets);
  EXPECT_EQ(a.plan.send_idx, b.plan.send_idx);
  EXPECT_EQ(a.plan.send_offsets, b.plan.send_offsets);
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.weight, b.weight);
  EXPECT_EQ(a.degree_owned, b.degree_owned);
  EXPECT_EQ(a.degree_halo, b.degree_halo);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.valid, b.valid);
  EXPECT_EQ(a.test, b.test);
}

TEST(OneShardBuilder, PtScotchShardsEqualWholeGraphShardsOfTheSameAssignment) {
  if (!partition::ptscotch_available()) GTEST_SKIP() << "this build has no PT-Scotch";
  const int rank = world_rank(), size = world_size();
  const partition_test::TempDir mine("builders");
  const std::string dir = shared_dir(mine);
  const std::string graph_path = dir + "/g.h5";
  // 4 blocks of 40 (interleaved ids), 3 isolated vertices, a self-loop on vertex 1, weights, 3 features,
  // 4 classes, all three splits.
  const graph::Graph g = partition_test::community_graph(40, 4, 3, /*seed=*/7, /*directed=*/false,
                                                         /*weighted=*/true);
  if (rank == 0) io::write_graph(graph_path, g);
  MPI_Barrier(MPI_COMM_WORLD);

  for (const int32_t parts : {1, 3, 5}) {  // P < K, = K (np2: 3 > 2), > K
    SCOPED_TRACE("P = " + std::to_string(parts) + ", K = " + std::to_string(size));
    partition::PartitionRequest request;
    request.graph_path = graph_path;
    request.output_dir = dir + "/pt" + std::to_string(parts);
    request.options.method = partition::Method::ptscotch;
    request.options.num_parts = parts;
    request.options.seed = 3;
    request.feature_block_bytes = 64;  // features read in several blocks
    partition::partition_graph_file_ptscotch(request);
    if (rank != 0) continue;

    const graph::Graph read = io::read_graph(graph_path);
    const partition::HaloPlan plan = partition::build_halo_plan(
        read.adjacency, io::read_assignment(io::assignment_path(request.output_dir), parts, read.num_nodes),
        parts);
    int64_t halo_rows = 0;
    for (int32_t p = 0; p < parts; ++p) {
      SCOPED_TRACE("part " + std::to_string(p));
      graph::Shard whole = partition::build_shard(read, plan, p);
      partition::apply_vertex_order(whole, request.options.vertex_order);  // both paths: rcm, the default
      halo_rows += whole.num_halo();
      expect_same_shard(io::read_shard(request.output_dir, p), whole);
      const std::string written =
          mine.sub("whole-" + std::to_string(parts) + "-" + std::to_string(p) + ".h5");
      io::write_shard(written, whole);
      const std::string whole_bytes = file_bytes(written),
                        ptscotch_bytes = file_bytes(io::shard_path(request.output_dir, p));
      EXPECT_FALSE(whole_bytes.empty());
      EXPECT_TRUE(whole_bytes == ptscotch_bytes)
          << written << " and " << io::shard_path(request.output_dir, p) << " differ (" << whole_bytes.size()
          << " and " << ptscotch_bytes.size() << " bytes)";
    }
    if (parts > 1) {
      EXPECT_GT(halo_rows, 0) << "the comparison should cover halos and sends";
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0's TempDir outlives every rank's reads
}

// Partition's transport (Report::lowest_on_every_rank): every rank throws the lowest failing rank's message.
TEST(FailTogether, MpiCommGivesEveryRankTheLowestFailingRanksMessage) {
  const int rank = world_rank(), size = world_size();
  EXPECT_NO_THROW(partition::collectively(MPI_COMM_WORLD, [] {}));
  try {
    partition::collectively(MPI_COMM_WORLD, [&] {
      if (rank >= size / 2) throw UserError("rank " + std::to_string(rank) + " failed");
    });
    ADD_FAILURE() << "no rank threw";
  } catch (const PeerFailed&) {
    ADD_FAILURE() << "PeerFailed: every rank should have the message";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(size / 2) + " failed");
  }
  // A std::exception that is not a UserError (HDF5 trouble) fails the job as well, as a UserError.
  try {
    partition::collectively(MPI_COMM_WORLD, [&] {
      if (rank == size - 1) throw std::runtime_error("library trouble");
    });
    ADD_FAILURE() << "no rank threw";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), "library trouble");
  }
}

// Training's transport: failing ranks rethrow their own error, the others PeerFailed; or only the lowest.
TEST(FailTogether, CommunicatorGivesFailingRanksTheirOwnErrorAndOthersPeerFailed) {
  comm::MpiComm comm;
  const int rank = comm.rank(), size = comm.size();
  auto fail_odd = [&] {
    if (rank % 2 == 1) throw UserError("rank " + std::to_string(rank) + " failed");
  };
  for (const Report report : {Report::every_failing_rank, Report::lowest_failing_rank}) {
    try {
      train::run_collectively(comm, fail_odd, report);
      ADD_FAILURE() << "no rank threw";
    } catch (const PeerFailed&) {
      EXPECT_TRUE(rank % 2 == 0 || (report == Report::lowest_failing_rank && rank != 1)) << "rank " << rank;
    } catch (const UserError& e) {
      EXPECT_EQ(rank % 2, 1);
      if (report == Report::lowest_failing_rank) {
        EXPECT_EQ(rank, 1);
      }
      EXPECT_EQ(std::string(e.what()), "rank " + std::to_string(rank) + " failed");
    }
  }
  EXPECT_GE(size, 2) << "run under mpiexec -np 2 or more";
}

}  // namespace
}  // namespace halogen
