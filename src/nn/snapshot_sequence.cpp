#include "nn/snapshot_sequence.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

SnapshotSequence::SnapshotSequence(comm::Communicator& comm, const graph::Shard& shard,
                                   graph::Normalization normalization, int64_t max_width, Device device,
                                   kernels::Stream stream)
    : normalization_(normalization), num_owned_(shard.num_owned()), max_width_(max_width), device_(device),
      stream_(stream) {
  HALOGEN_ASSERT(max_width >= 1);
  const int64_t n = num_owned_;
  for (const graph::ShardSnapshot& snapshot : shard.snapshots) {
    const graph::LocalGraph local = graph::build_local_graph(snapshot, n, normalization);
    steps_.push_back(std::make_unique<DistributedAdjacency>(comm, local, snapshot.plan, max_width, device, stream));
    max_halo_ = std::max(max_halo_, local.num_halo);
    allocated_bytes_ += DistributedAdjacency::bytes_for(
        n, local.num_halo, local.a_own.nnz() + local.a_halo.nnz(), snapshot.plan.num_send(), max_width,
        value_layout(local.a_own), device);
  }
  x_scratch_ = Tensor(2 * (n + max_halo_), max_width, device);
  std::vector<int32_t> identity(static_cast<size_t>(n));
  std::iota(identity.begin(), identity.end(), 0);
  identity_ = Buffer<int32_t>(n, device);
  identity_.copy_from_host(identity.data(), n);
  allocated_bytes_ += x_scratch_.size() * static_cast<int64_t>(sizeof(float)) +
                      n * static_cast<int64_t>(sizeof(int32_t));
}

SnapshotSequence::~SnapshotSequence() = default;

void SnapshotSequence::set_clock(PhaseClock* clock) {
  for (auto& step : steps_) step->set_clock(clock);
}

void SnapshotSequence::set_overlap(bool overlap) {
  for (auto& step : steps_) step->set_overlap(overlap);
}

int64_t SnapshotSequence::bytes_sent() const {
  int64_t bytes = 0;
  for (const auto& step : steps_) bytes += step->exchange().stats().bytes_sent;
  return bytes;
}

Matrix<float> SnapshotSequence::stage_input(int64_t t, Matrix<const float> x, int64_t slot) {
  HALOGEN_ASSERT(t >= 0 && t < steps(), "step %lld of %lld", (long long)t, (long long)steps());
  const int64_t n = num_owned_, f = x.cols;
  HALOGEN_ASSERT(x.rows == n && f <= max_width_, "aggregate: x is %lld x %lld, expected %lld rows, width <= %lld",
                 (long long)x.rows, (long long)f, (long long)n, (long long)max_width_);
  float* buffer = x_scratch_.data() + slot * (n + max_halo_) * max_width_;
  Matrix<float> staged{buffer, n + steps_[t]->num_halo(), f, f, device_};
  if (n > 0 && f > 0)
    kernels::gather_rows(x, Span<const int32_t>{identity_.data(), n, device_}, staged.slice_rows(0, n), stream_);
  return staged;
}

void SnapshotSequence::aggregate(int64_t t, Matrix<const float> x, Matrix<float> out) {
  const Matrix<float> staged = stage_input(t, x, 0);  // checks t
  steps_[t]->forward(staged, out);
}

void SnapshotSequence::aggregate_transpose(int64_t t, Matrix<const float> g, Matrix<float> out) {
  HALOGEN_ASSERT(t >= 0 && t < steps(), "step %lld of %lld", (long long)t, (long long)steps());
  steps_[t]->transpose(g, out);
}

void SnapshotSequence::aggregate_many(const std::vector<int64_t>& t, const std::vector<Matrix<const float>>& x,
                                      const std::vector<Matrix<float>>& out) {
  HALOGEN_ASSERT(x.size() == t.size() && out.size() == t.size());
  std::vector<DistributedAdjacency*> adjacencies;
  adjacencies.reserve(t.size());
  for (int64_t step : t) {
    HALOGEN_ASSERT(step >= 0 && step < steps(), "step %lld of %lld", (long long)step, (long long)steps());
    adjacencies.push_back(steps_[step].get());
  }
  forward_pipelined(adjacencies, [&](int64_t i) { return stage_input(t[i], x[i], i % 2); }, out);
}

}  // namespace halogen::nn
