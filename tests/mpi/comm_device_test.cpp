// NcclComm across P ranks (mpiexec -np 2 / 4): a ring exchange and neighbour exchanges with predictable data
// (element i of the message from rank q is f(q, i)), and the device allreduce. NCCL needs one GPU per rank,
// so every rank skips (together) unless each rank of a node has its own GPU, and in builds without CUDA.
#include <gtest/gtest.h>
#include <mpi.h>

#ifdef HALOGEN_HAVE_CUDA
#include <vector>

#include "comm/nccl/nccl_comm.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#endif

namespace {

#ifdef HALOGEN_HAVE_CUDA
using namespace halogen;

// True on every rank when each rank of every node can have its own GPU (same answer on all ranks).
bool every_rank_has_a_gpu() {
  MPI_Comm node;
  int rank = 0, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_size);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  int missing = cuda::usable_device_count() < local_size ? 1 : 0, any_missing = 0;
  MPI_Allreduce(&missing, &any_missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_missing) return false;
  cuda::initialise_device(local_rank);
  return true;
}

float message_value(int from, int to, int64_t i) { return static_cast<float>(from * 1000 + to * 100) + 0.5f * i; }
#endif

}  // namespace

TEST(NcclCommRanks, NeighbourExchangeAndAllreduceMatchPredictableData) {
#ifndef HALOGEN_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  if (!every_rank_has_a_gpu()) GTEST_SKIP() << "needs one GPU per rank";
  comm::NcclComm comm;
  const int rank = comm.rank(), size = comm.size();
  void* stream = cuda::create_stream();
  // Every rank sends to every other rank a message whose length depends on (from, to); zero-length
  // messages (from + to divisible by 3) are skipped by both sides.
  const auto length = [](int from, int to) -> int64_t { return (from + to) % 3 == 0 ? 0 : 17 + from * 5 + to; };
  std::vector<Buffer<float>> send_buffers, recv_buffers;
  std::vector<comm::Message> sends, receives;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    std::vector<float> out(length(rank, peer));
    for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) out[i] = message_value(rank, peer, i);
    send_buffers.emplace_back(static_cast<int64_t>(out.size()), Device::cuda);
    send_buffers.back().copy_from_host(out.data(), static_cast<int64_t>(out.size()));
    recv_buffers.emplace_back(length(peer, rank), Device::cuda);
    sends.push_back({peer, send_buffers.back().data(), send_buffers.back().size()});
    receives.push_back({peer, recv_buffers.back().data(), recv_buffers.back().size()});
  }
  for (int round = 0; round < 3; ++round) comm.wait(comm.start_exchange(sends, receives, stream), stream);
  cuda::synchronize_stream(stream);
  for (size_t k = 0; k < receives.size(); ++k) {
    std::vector<float> got(recv_buffers[k].size());
    recv_buffers[k].copy_to_host(got.data());
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i)
      ASSERT_EQ(got[i], message_value(receives[k].peer, rank, i)) << "from " << receives[k].peer << " element " << i;
  }
  // Allreduce: element i of rank q holds q + i / 4; the sum over ranks is exact in float.
  const int64_t n = 1025;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(rank) + 0.25f * i;
  Buffer<float> x(n, Device::cuda);
  x.copy_from_host(values.data(), n);
  comm.allreduce_sum(x.data(), n, stream);
  cuda::synchronize_stream(stream);
  x.copy_to_host(values.data());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(values[i], static_cast<float>(size * (size - 1) / 2) + size * 0.25f * i) << "element " << i;
  cuda::destroy_stream(stream);
#endif
}
