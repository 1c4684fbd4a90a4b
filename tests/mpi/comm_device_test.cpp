// Device communicators across P ranks (mpiexec -np 2 / 4), with predictable data (element i of the message
// from rank q to rank r is f(q, r, i); allreduce inputs whose float sums are exact):
// - NcclComm: NCCL needs one GPU per rank, so every rank skips (together) unless each rank of a node has its
//   own GPU;
// - HostStagedComm over MpiComm: ranks may share a GPU (GPU = local rank modulo visible GPUs), so this runs
//   wherever one GPU is visible.
// Both skip in builds without CUDA and on machines without a GPU.
#include <gtest/gtest.h>
#include <mpi.h>

#ifdef HALOGEN_HAVE_CUDA
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/nccl/host_staged_comm.h"
#include "comm/nccl/nccl_comm.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#endif

namespace {

#ifdef HALOGEN_HAVE_CUDA
using namespace halogen;

// True on every rank when each rank of every node can have its own GPU (`own_gpu`) or at least some GPU
// (same answer on all ranks); then selects this rank's GPU.
bool every_rank_has_a_gpu(bool own_gpu) {
  MPI_Comm node;
  int rank = 0, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &local_size);
  int local_rank = 0;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_free(&node);
  const int needed = own_gpu ? local_size : 1;
  int missing = cuda::usable_device_count() < needed ? 1 : 0, any_missing = 0;
  MPI_Allreduce(&missing, &any_missing, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_missing) return false;
  cuda::initialise_device(local_rank);
  return true;
}

float message_value(int from, int to, int64_t i) { return static_cast<float>(from * 1000 + to * 100) + 0.5f * i; }

// Three rounds of an all-to-all exchange with rank-pair-dependent lengths (some zero), then a device
// allreduce; every received element and every sum is checked exactly.
void exercise(comm::Communicator& comm) {
  const int rank = comm.rank(), size = comm.size();
  ASSERT_EQ(comm.device(), Device::cuda);
  void* stream = cuda::create_stream();
  const auto length = [](int from, int to) -> int64_t { return (from + to) % 3 == 0 ? 0 : 17 + from * 5 + to; };
  std::vector<Buffer<float>> send_buffers, recv_buffers;
  std::vector<comm::Message> sends, receives;
  send_buffers.reserve(size);
  recv_buffers.reserve(size);
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
  for (int round = 0; round < 3; ++round) {
    for (auto& buffer : recv_buffers) kernels::cuda::fill(buffer.span(), -1.0f, stream);
    comm.wait(comm.start_exchange(sends, receives, stream), stream);
  }
  cuda::synchronize_stream(stream);
  // Mismatches are counted, not asserted one by one: a rank must not leave early and strand the others in
  // the allreduce below.
  int64_t wrong = 0;
  for (size_t k = 0; k < receives.size(); ++k) {
    std::vector<float> got(recv_buffers[k].size());
    recv_buffers[k].copy_to_host(got.data());
    for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i)
      wrong += got[i] != message_value(receives[k].peer, rank, i);
  }
  EXPECT_EQ(wrong, 0) << "wrong halo elements on rank " << rank;
  // Allreduce: element i of rank q holds q + i / 4; the sum over ranks is exact in float.
  const int64_t n = 1025;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(rank) + 0.25f * i;
  Buffer<float> x(n, Device::cuda);
  x.copy_from_host(values.data(), n);
  comm.allreduce_sum(x.data(), n, stream);
  cuda::synchronize_stream(stream);
  x.copy_to_host(values.data());
  wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += values[i] != static_cast<float>(size * (size - 1) / 2) + size * 0.25f * i;
  EXPECT_EQ(wrong, 0) << "wrong sums on rank " << rank;
  // The same sums started in two buckets (last one first, as nn::GradientReducer does), progressed, waited.
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(rank) + 0.25f * i;
  x.copy_from_host(values.data(), n);
  auto upper = comm.start_allreduce_sum(x.data() + 400, n - 400, stream);
  auto lower = comm.start_allreduce_sum(x.data(), 400, stream);
  comm.progress(*upper);
  comm.wait(std::move(upper), stream);
  comm.wait(std::move(lower), stream);
  cuda::synchronize_stream(stream);
  x.copy_to_host(values.data());
  wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += values[i] != static_cast<float>(size * (size - 1) / 2) + size * 0.25f * i;
  EXPECT_EQ(wrong, 0) << "wrong bucketed sums on rank " << rank;
  double scalar = rank + 1.0;
  comm.allreduce_sum(&scalar, 1);
  EXPECT_EQ(scalar, size * (size + 1) / 2.0);
  cuda::destroy_stream(stream);
}
#endif

}  // namespace

TEST(DeviceComm, NcclExchangeAndAllreduceMatchPredictableData) {
#ifndef HALOGEN_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  if (!every_rank_has_a_gpu(true)) GTEST_SKIP() << "needs one GPU per rank";
  comm::NcclComm comm;
  exercise(comm);
#endif
}

TEST(DeviceComm, HostStagedExchangeAndAllreduceMatchPredictableData) {
#ifndef HALOGEN_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  if (!every_rank_has_a_gpu(false)) GTEST_SKIP() << "needs a GPU";
  comm::HostStagedComm comm(std::make_unique<comm::MpiComm>());
  exercise(comm);
#endif
}
