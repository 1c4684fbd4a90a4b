// GradientReducer across P ranks (mpiexec -np 2 / 4): the bucketed, overlapped gradient allreduce gives exactly
// the bits of the blocking allreduce on the same bucket slices, for bucket sizes from one bucket per layer to
// one bucket for all, whatever order the layers are reported in; and a Model's backward that reports its
// layers to a reducer leaves exactly the gradients of a plain backward followed by the same blocking
// allreduces. Gradients are rank-dependent pseudo-random floats whose sums round (no exact sums), so a
// reduction in another order or over other slices would show in the bits.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <vector>

#include "comm/mpi_comm.h"
#include "core/rng.h"
#include "nn/gradient_reducer.h"
#include "nn/model.h"
#include "train/synthetic_graph.h"

namespace halogen {
namespace {

// Four layers of different widths (layer 2 is the widest, layer 3 the narrowest), weight then bias each.
void add_layers(nn::ParameterStore& store) {
  const int64_t widths[] = {13, 9, 40, 7, 3};
  for (int l = 0; l < 4; ++l) {
    store.add("layer" + std::to_string(l) + ".weight", l, widths[l], widths[l + 1], false);
    store.add("layer" + std::to_string(l) + ".bias", l, 1, widths[l + 1], true);
  }
  store.allocate(Device::cpu);
}

void fill_gradients(nn::ParameterStore& store, int rank, uint64_t seed) {
  Tensor& grads = store.grads();
  for (int64_t i = 0; i < grads.size(); ++i) {
    const double u = rng::uniform(seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(i));
    grads[i] = static_cast<float>(2.0 * u - 1.0);
  }
}

std::vector<float> to_vector(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.size()); }

// Elements whose bits differ (0 when equal); counted, not asserted one by one, so no rank leaves early.
int64_t bitwise_differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return -1;
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return differ;
}

// The blocking allreduce of the reducer's bucket slices (the reference the contract names).
std::vector<float> blocking_reference(comm::Communicator& comm, nn::ParameterStore& store,
                                      const nn::GradientReducer& reducer) {
  std::vector<float> expected = to_vector(store.grads());
  for (int b = 0; b < reducer.num_buckets(); ++b)
    comm.allreduce_sum(expected.data() + reducer.bucket(b).offset, reducer.bucket(b).count, nullptr);
  return expected;
}

TEST(GradientReducer, BucketsEqualBlockingAllreduceBitwiseForEveryBucketSize) {
  comm::MpiComm comm;
  nn::ParameterStore store;
  add_layers(store);
  // Layer bytes: 504, 1600, 1148, 96 (layers 0..3); buckets fill from layer 3 and close once they hold at
  // least the bucket size. 0 and 50 B: a bucket per layer; 100 B: {3, 2} {1} {0}; 1300 B: {3, 2, 1} {0};
  // kOneBucket: all.
  const int64_t sizes[] = {0, 50, 100, 1300, nn::GradientReducer::kOneBucket};
  const int expected_buckets[] = {4, 4, 3, 2, 1};
  for (int i = 0; i < 5; ++i) {
    nn::GradientReducer reducer(store, comm, sizes[i]);
    EXPECT_EQ(reducer.num_buckets(), expected_buckets[i]) << "bucket bytes " << sizes[i];
    for (int step = 0; step < 3; ++step) {  // the same reducer over several steps
      fill_gradients(store, comm.rank(), 100 * i + step);
      const std::vector<float> expected = blocking_reference(comm, store, reducer);
      reducer.begin(nullptr);
      for (int l = 3; l >= 0; --l) reducer.layer_ready(l);
      reducer.finish();
      EXPECT_EQ(bitwise_differences(to_vector(store.grads()), expected), 0)
          << "bucket bytes " << sizes[i] << ", step " << step;
    }
  }
}

TEST(GradientReducer, OneBucketEqualsTheBlockingWholeBufferAllreduce) {
  // The temporal trainer's use: everything ready at once, one bucket, as the old single allreduce call.
  comm::MpiComm comm;
  nn::ParameterStore store;
  add_layers(store);
  nn::GradientReducer reducer(store, comm, nn::GradientReducer::kOneBucket);
  fill_gradients(store, comm.rank(), 7);
  std::vector<float> expected = to_vector(store.grads());
  comm.allreduce_sum(expected.data(), static_cast<int64_t>(expected.size()), nullptr);
  reducer.begin(nullptr);
  reducer.all_ready();
  reducer.finish();
  EXPECT_EQ(bitwise_differences(to_vector(store.grads()), expected), 0);
}

TEST(GradientReducer, AnyReportingOrderGivesTheSameBits) {
  // Buckets start in bucket order whatever the reporting order, so ranks never start collectives out of step
  // even when they report layers differently (here: each rank its own order).
  comm::MpiComm comm;
  nn::ParameterStore store;
  add_layers(store);
  nn::GradientReducer reducer(store, comm, 0);
  const int orders[4][4] = {{0, 1, 2, 3}, {2, 0, 3, 1}, {3, 2, 1, 0}, {1, 3, 0, 2}};
  fill_gradients(store, comm.rank(), 11);
  const std::vector<float> expected = blocking_reference(comm, store, reducer);
  reducer.begin(nullptr);
  for (int layer : orders[comm.rank() % 4]) reducer.layer_ready(layer);
  reducer.finish();
  EXPECT_EQ(bitwise_differences(to_vector(store.grads()), expected), 0);
}

TEST(GradientReducer, ModelBackwardWithReducerEqualsBackwardThenBlockingAllreduce) {
  // The model reports each layer right after its backward; if it reported one before its gradients were
  // final, the summed bits would differ from a plain backward followed by the same slices' blocking sums.
  comm::MpiComm comm;
  const int P = comm.size(), rank = comm.rank();
  const graph::Graph g = testing::synthetic_graph(150, 4, 12, 3, 5);
  std::vector<int32_t> part_of(g.num_nodes);
  for (int64_t v = 0; v < g.num_nodes; ++v) part_of[v] = static_cast<int32_t>((v * 7 + v / 3) % P);
  const graph::Shard shard = testing::make_shard(g, part_of, P, rank);
  for (nn::ConvKind kind : {nn::ConvKind::gcn, nn::ConvKind::sage}) {
    nn::ModelConfig config;
    config.kind = kind;
    config.layers = 3;
    config.hidden = 16;
    config.dropout = 0.5f;
    config.seed = 9;
    nn::Model model(config, comm, shard, Device::cpu);
    nn::GradientReducer reducer(model.parameters(), comm, 0, &model.clock());
    ASSERT_EQ(reducer.num_buckets(), 3);
    model.train_step_local(/*epoch=*/4, 0.01f);
    const std::vector<float> expected = blocking_reference(comm, model.parameters(), reducer);
    model.train_step_local(/*epoch=*/4, 0.01f, &reducer);
    reducer.finish();
    EXPECT_EQ(bitwise_differences(to_vector(model.parameters().grads()), expected), 0);
    const nn::PhaseTimes times = model.clock().take();
    EXPECT_GE(times.allreduce_ms, times.allreduce_exposed_ms);  // the wait is part of the time in flight
  }
}

}  // namespace
}  // namespace halogen
