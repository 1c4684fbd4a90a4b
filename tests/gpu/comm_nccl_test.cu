// NcclComm on one rank (the test process is an MPI singleton; no mpiexec): exchanges and the device allreduce
// (blocking, and started in buckets then waited, as nn::GradientReducer does; also through HostStagedComm)
// are ordered with the compute stream by events, and one-rank collectives are the identity. P-rank exchanges
// are tested by tests/mpi/comm_nccl_test.cpp wherever each rank has its own GPU.
#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/mpi_comm.h"
#include "comm/mpi_session.h"
#include "comm/device_comm.h"
#include "comm/nccl/host_staged_comm.h"
#include "comm/nccl/nccl_comm.h"
#include "core/error.h"
#include "gpu_test_util.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

// MPI is started by the first test that needs it (after the GPU check, so a run without GPU never starts
// MPI) and finalised after all tests.
void ensure_mpi() {
  static comm::MpiSession* session = new comm::MpiSession(nullptr, nullptr);  // finalised by MpiEnvironment
  (void)session;
}

class MpiEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
  }
};
::testing::Environment* const mpi_environment = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

}  // namespace

TEST(NcclCommOneRank, ExchangeWithoutPeersKeepsStreamOrder) {
  HALOGEN_REQUIRE_GPU();
  ensure_mpi();
  comm::NcclComm comm(MPI_COMM_SELF);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.device(), Device::cuda);
  void* stream = cuda::create_stream();
  Buffer<float> x(1000, Device::cuda);
  for (int round = 0; round < 10; ++round) {  // more rounds than pre-made events: the pool grows and recycles
    kernels::cuda::fill(x.span(), static_cast<float>(round), stream);
    auto request = comm.start_exchange({}, {}, stream);
    comm.wait(std::move(request), stream);
  }
  kernels::cuda::axpy(1.0f, Span<const float>{x.data(), x.size(), Device::cuda}, x.span(), stream);
  cuda::synchronize_stream(stream);
  EXPECT_EQ(to_host(x), std::vector<float>(1000, 18.0f));
  cuda::destroy_stream(stream);
}

TEST(NcclCommOneRank, DeviceAllreduceIsOrderedAndIdentity) {
  HALOGEN_REQUIRE_GPU();
  ensure_mpi();
  comm::NcclComm comm(MPI_COMM_SELF);
  void* stream = cuda::create_stream();
  const std::vector<float> values = dyadic_values(4099, 3);
  Buffer<float> x(static_cast<int64_t>(values.size()), Device::cuda);
  x.copy_from_host(values.data(), x.size());
  // Double on the compute stream, sum over one rank (identity) on the comm stream, double again: only
  // correct if the allreduce ran after the first and before the second kernel.
  kernels::cuda::axpy(1.0f, Span<const float>{x.data(), x.size(), Device::cuda}, x.span(), stream);
  comm.allreduce_sum(x.data(), x.size(), stream);
  kernels::cuda::axpy(1.0f, Span<const float>{x.data(), x.size(), Device::cuda}, x.span(), stream);
  cuda::synchronize_stream(stream);
  std::vector<float> expected = values;
  for (float& v : expected) v *= 4.0f;
  EXPECT_EQ(to_host(x), expected);
  cuda::destroy_stream(stream);
}

// Three buckets of one buffer started back to back (one of them empty), then completed: each allreduce reads
// what the compute stream wrote before its start, and work queued after wait() sees the (identity) sums. The
// reducer's use of start_allreduce_sum / progress / wait (nn/gradient_reducer.h), for either device comm.
void exercise_bucketed_allreduce(comm::Communicator& comm) {
  void* stream = cuda::create_stream();
  const std::vector<float> values = dyadic_values(6000, 5);
  Buffer<float> x(static_cast<int64_t>(values.size()), Device::cuda);
  x.copy_from_host(values.data(), x.size());
  const int64_t bounds[] = {0, 2500, 2500, 6000};  // buckets [0, 2500), [2500, 2500), [2500, 6000)
  for (int round = 0; round < 3; ++round) {  // requests end and their events or staging buffers are reused
    kernels::cuda::axpy(1.0f, Span<const float>{x.data(), x.size(), Device::cuda}, x.span(), stream);  // x *= 2
    std::vector<std::unique_ptr<comm::Request>> requests;
    for (int b = 2; b >= 0; --b)  // last bucket first, as the backward finishes them
      requests.push_back(comm.start_allreduce_sum(x.data() + bounds[b], bounds[b + 1] - bounds[b], stream));
    for (auto& request : requests) comm.progress(*request);
    for (auto& request : requests) comm.wait(std::move(request), stream);
  }
  kernels::cuda::axpy(1.0f, Span<const float>{x.data(), x.size(), Device::cuda}, x.span(), stream);
  cuda::synchronize_stream(stream);
  std::vector<float> expected = values;
  for (float& v : expected) v *= 16.0f;  // dyadic values: every doubling is exact
  EXPECT_EQ(to_host(x), expected);
  cuda::destroy_stream(stream);
}

TEST(NcclCommOneRank, StartedAllreducesAreOrderedWithTheComputeStream) {
  HALOGEN_REQUIRE_GPU();
  ensure_mpi();
  comm::NcclComm comm(MPI_COMM_SELF);
  exercise_bucketed_allreduce(comm);
}

TEST(HostStagedCommOneRank, StartedAllreducesAreOrderedWithTheComputeStream) {
  HALOGEN_REQUIRE_GPU();
  ensure_mpi();
  comm::HostStagedComm comm(std::make_unique<comm::MpiComm>(MPI_COMM_SELF));
  exercise_bucketed_allreduce(comm);
}

TEST(NcclCommOneRank, HostCollectivesAreIdentity) {
  HALOGEN_REQUIRE_GPU();
  ensure_mpi();
  comm::NcclComm comm(MPI_COMM_SELF);
  double sums[2] = {1.5, -2.0}, maxima[1] = {3.25};
  int64_t counts[3] = {7, 0, -1};
  comm.allreduce_sum(sums, 2);
  comm.allreduce_sum(counts, 3);
  comm.allreduce_max(maxima, 1);
  comm.barrier();
  EXPECT_EQ(sums[0], 1.5);
  EXPECT_EQ(sums[1], -2.0);
  EXPECT_EQ(counts[0], 7);
  EXPECT_EQ(counts[2], -1);
  EXPECT_EQ(maxima[0], 3.25);
}

TEST(MakeDeviceComm, UnknownNameIsAUserError) {
  // Needs neither a GPU nor MPI: the name is checked first.
  EXPECT_THROW(comm::make_device_comm("tcp"), UserError);
}
