// SnapshotSequence (one nn::DistributedAdjacency per step) on Device::cuda with a compute stream gives what it
// gives on the CPU: aggregate, aggregate_transpose and the pipelined aggregate_many, for every step of a small
// temporal graph (one rank, SelfComm). Tolerance 1e-5 absolute on values of size <= ~1: rows of a few terms
// summed in cuSPARSE's order instead of the CPU kernel's differ by a few ulps; a missed row, a stale scratch
// buffer or a missing stream dependency is off by far more.
#include <cmath>
#include <vector>

#include "comm/self_comm.h"
#include "core/rng.h"
#include "dynamic/temporal_shards.h"
#include "gpu_test_util.h"
#include "nn/compute_stream.h"
#include "nn/snapshot_sequence.h"

using namespace halogen;

namespace {

std::vector<float> host_values(int64_t count, uint64_t stream) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = 2.0f * static_cast<float>(rng::uniform(5, stream, i)) - 1.0f;
  return v;
}

Tensor on_device(const std::vector<float>& values, int64_t rows, int64_t cols) {
  Tensor t(rows, cols, Device::cuda);
  t.copy_from_host(values.data(), rows * cols);
  return t;
}

std::vector<float> to_host(const Tensor& t) {
  std::vector<float> v(t.size());
  t.copy_to_host(v.data());
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& expected, const char* what) {
  ASSERT_EQ(got.size(), expected.size());
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += !(std::abs(got[i] - expected[i]) <= 1e-5f);
  EXPECT_EQ(wrong, 0) << what;
}

TEST(SnapshotSequenceDevice, CudaMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  const graph::Graph g = halogen::testing::small_temporal_graph(30, 4, 3);
  const graph::Shard shard = halogen::testing::temporal_shard(g, 1, 0);
  const int64_t n = shard.num_owned(), f = 5;
  comm::SelfComm cpu_comm(Device::cpu), gpu_comm(Device::cuda);
  nn::ComputeStream stream(Device::cuda);
  for (auto normalization : {graph::Normalization::gcn, graph::Normalization::chebyshev}) {
    nn::SnapshotSequence cpu(cpu_comm, shard, normalization, f);
    nn::SnapshotSequence gpu(gpu_comm, shard, normalization, f, Device::cuda, stream.get());
    const std::vector<int64_t> steps{2, 0, 3};
    std::vector<std::vector<float>> x;
    std::vector<Tensor> x_gpu, out_gpu;
    for (size_t i = 0; i < steps.size(); ++i) {
      x.push_back(host_values(n * f, i));
      x_gpu.push_back(on_device(x.back(), n, f));
      out_gpu.emplace_back(n, f, Device::cuda);
    }
    Tensor out_cpu(n, f, Device::cpu);
    for (int64_t t = 0; t < cpu.steps(); ++t) {
      cpu.aggregate(t, Matrix<const float>{x[0].data(), n, f, f, Device::cpu}, out_cpu.matrix());
      gpu.aggregate(t, x_gpu[0].matrix(), out_gpu[0].matrix());
      stream.synchronize();
      expect_close(to_host(out_gpu[0]), to_host(out_cpu), "aggregate");
      cpu.aggregate_transpose(t, Matrix<const float>{x[1].data(), n, f, f, Device::cpu}, out_cpu.matrix());
      gpu.aggregate_transpose(t, x_gpu[1].matrix(), out_gpu[0].matrix());
      stream.synchronize();
      expect_close(to_host(out_gpu[0]), to_host(out_cpu), "aggregate_transpose");
    }
    std::vector<Matrix<const float>> in;
    std::vector<Matrix<float>> out;
    for (size_t i = 0; i < steps.size(); ++i) {
      in.push_back(x_gpu[i].matrix());
      out.push_back(out_gpu[i].matrix());
    }
    gpu.aggregate_many(steps, in, out);
    stream.synchronize();
    for (size_t i = 0; i < steps.size(); ++i) {
      cpu.aggregate(steps[i], Matrix<const float>{x[i].data(), n, f, f, Device::cpu}, out_cpu.matrix());
      expect_close(to_host(out_gpu[i]), to_host(out_cpu), "aggregate_many");
    }
  }
}

}  // namespace
