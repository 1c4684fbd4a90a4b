#include "nn/snapshot_sequence.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

struct SnapshotSequence::Step {
  SparseAdjacency adjacency;
  std::unique_ptr<comm::HaloExchange> halo;
  int64_t num_halo = 0;
};

graph::Shard snapshot_as_shard(const graph::Shard& shard, int64_t t) {
  HALOGEN_ASSERT(t >= 0 && t < static_cast<int64_t>(shard.snapshots.size()));
  const graph::ShardSnapshot& s = shard.snapshots[t];
  graph::Shard view;
  view.part = shard.part;
  view.num_parts = shard.num_parts;
  view.global_num_nodes = shard.global_num_nodes;
  view.owned_gid = shard.owned_gid;
  view.halo_gid.reserve(s.halo_rows.size());
  for (int64_t row : s.halo_rows) view.halo_gid.push_back(shard.halo_gid[row]);
  view.recv_offsets = s.recv_offsets;
  view.send_idx = s.send_idx;
  view.send_offsets = s.send_offsets;
  view.indptr = s.indptr;
  view.indices = s.indices;
  view.weight = s.weight;
  view.degree_owned = s.degree_owned;
  view.degree_halo = s.degree_halo;
  return view;
}

SnapshotSequence::SnapshotSequence(comm::Communicator& comm, const graph::Shard& shard,
                                   graph::Normalization normalization, int64_t max_width)
    : comm_(comm), normalization_(normalization), num_owned_(shard.num_owned()), max_width_(max_width) {
  HALOGEN_ASSERT(comm.device() == Device::cpu, "temporal models run on the CPU");
  HALOGEN_ASSERT(max_width >= 1);
  const int64_t steps = static_cast<int64_t>(shard.snapshots.size());
  for (int64_t t = 0; t < steps; ++t) {
    const graph::Shard view = snapshot_as_shard(shard, t);
    auto step = std::make_unique<Step>();
    const graph::LocalGraph local = graph::build_local_graph(view, normalization);
    step->adjacency = SparseAdjacency(local, Device::cpu);
    step->halo = std::make_unique<comm::HaloExchange>(comm, view, max_width);
    step->num_halo = view.num_halo();
    max_halo_ = std::max(max_halo_, step->num_halo);
    allocated_bytes_ += DeviceCsr::bytes_for(local.a_own.rows, local.a_own.nnz()) +
                        DeviceCsr::bytes_for(local.a_halo.rows, local.a_halo.nnz()) +
                        DeviceCsr::bytes_for(local.a_own_t.rows, local.a_own_t.nnz()) +
                        DeviceCsr::bytes_for(local.a_halo_t.rows, local.a_halo_t.nnz()) +
                        comm::HaloExchange::buffer_bytes(step->halo->num_send(), max_width);
    steps_.push_back(std::move(step));
  }
  x_scratch_ = Tensor(2 * (num_owned_ + max_halo_), max_width, Device::cpu);
  partial_ = Tensor(max_halo_, max_width, Device::cpu);
  allocated_bytes_ += (2 * num_owned_ + 3 * max_halo_) * max_width * static_cast<int64_t>(sizeof(float));
}

SnapshotSequence::~SnapshotSequence() = default;

int64_t SnapshotSequence::bytes_sent() const {
  int64_t bytes = 0;
  for (const auto& step : steps_) bytes += step->halo->stats().bytes_sent;
  return bytes;
}

void SnapshotSequence::spmm(const DeviceCsr& a, Matrix<const float> x, Matrix<float> out, bool accumulate) {
  if (clock_ != nullptr) clock_->begin(Phase::spmm, nullptr);
  kernels::spmm(a.view(), x, out, accumulate, nullptr);
  if (clock_ != nullptr) clock_->end(Phase::spmm, nullptr);
}

namespace {
struct HaloTimer {  // halo_total from start to finish, halo_exposed inside start/finish (as nn::GraphConv)
  PhaseClock* clock;
  bool moves;
  void begin_total() { if (clock != nullptr && moves) clock->begin(Phase::halo_total, nullptr); }
  void end_total() { if (clock != nullptr && moves) clock->end(Phase::halo_total, nullptr); }
  void begin_exposed() { if (clock != nullptr) clock->begin(Phase::halo_exposed, nullptr); }
  void end_exposed() { if (clock != nullptr) clock->end(Phase::halo_exposed, nullptr); }
};
}  // namespace

void SnapshotSequence::aggregate(int64_t t, Matrix<const float> x, Matrix<float> out) {
  HALOGEN_ASSERT(t >= 0 && t < steps());
  const int64_t n = num_owned_, f = x.cols;
  HALOGEN_ASSERT(x.rows == n && out.rows == n && out.cols == f && f <= max_width_, "aggregate: x %lld x %lld",
                 (long long)x.rows, (long long)f);
  Step& step = *steps_[t];
  const int64_t h = step.num_halo;
  Matrix<float> ext{x_scratch_.data(), n + h, f, f, Device::cpu};
  for (int64_t r = 0; r < n; ++r) std::memcpy(ext.row(r), x.row(r), f * sizeof(float));
  HaloTimer timer{clock_, step.halo->num_send() > 0 || h > 0};
  timer.begin_total();
  timer.begin_exposed();
  step.halo->start_forward(ext, nullptr);
  if (!overlap_) step.halo->finish_forward(nullptr);
  timer.end_exposed();
  spmm(step.adjacency.own, ext.slice_rows(0, n), out, false);
  if (overlap_) {
    timer.begin_exposed();
    step.halo->finish_forward(nullptr);
    timer.end_exposed();
  }
  timer.end_total();
  spmm(step.adjacency.halo, ext.slice_rows(n, n + h), out, true);
}

void SnapshotSequence::aggregate_many(const std::vector<int64_t>& t, const std::vector<Matrix<const float>>& x,
                                      const std::vector<Matrix<float>>& out) {
  const size_t m = t.size();
  HALOGEN_ASSERT(x.size() == m && out.size() == m);
  if (!overlap_ || m == 1) {
    for (size_t i = 0; i < m; ++i) aggregate(t[i], x[i], out[i]);
    return;
  }
  const int64_t n = num_owned_;
  std::vector<Matrix<float>> ext(m);
  auto start = [&](size_t i) {
    HALOGEN_ASSERT(t[i] >= 0 && t[i] < steps());
    HALOGEN_ASSERT(i == 0 || t[i] != t[i - 1], "consecutive steps must differ");
    const int64_t f = x[i].cols;
    HALOGEN_ASSERT(x[i].rows == n && out[i].rows == n && out[i].cols == f && f <= max_width_);
    Step& step = *steps_[t[i]];
    float* buffer = x_scratch_.data() + static_cast<int64_t>(i % 2) * (n + max_halo_) * max_width_;
    ext[i] = Matrix<float>{buffer, n + step.num_halo, f, f, Device::cpu};
    for (int64_t r = 0; r < n; ++r) std::memcpy(ext[i].row(r), x[i].row(r), f * sizeof(float));
    HaloTimer timer{clock_, step.halo->num_send() > 0 || step.num_halo > 0};
    timer.begin_exposed();
    step.halo->start_forward(ext[i], nullptr);
    timer.end_exposed();
  };
  if (clock_ != nullptr) clock_->begin(Phase::halo_total, nullptr);
  start(0);
  for (size_t i = 0; i < m; ++i) {
    if (i + 1 < m) start(i + 1);
    Step& step = *steps_[t[i]];
    spmm(step.adjacency.own, ext[i].slice_rows(0, n), out[i], false);
    HaloTimer timer{clock_, true};
    timer.begin_exposed();
    step.halo->finish_forward(nullptr);
    timer.end_exposed();
    spmm(step.adjacency.halo, ext[i].slice_rows(n, n + step.num_halo), out[i], true);
  }
  if (clock_ != nullptr) clock_->end(Phase::halo_total, nullptr);
}

void SnapshotSequence::aggregate_transpose(int64_t t, Matrix<const float> g, Matrix<float> out) {
  HALOGEN_ASSERT(t >= 0 && t < steps());
  const int64_t n = num_owned_, f = g.cols;
  HALOGEN_ASSERT(g.rows == n && out.rows == n && out.cols == f && f <= max_width_ && out.stride == f);
  Step& step = *steps_[t];
  const int64_t h = step.num_halo;
  Matrix<float> partial{partial_.data(), h, f, f, Device::cpu};
  spmm(step.adjacency.halo_t, g, partial, false);
  HaloTimer timer{clock_, step.halo->num_send() > 0 || h > 0};
  timer.begin_total();
  timer.begin_exposed();
  step.halo->start_reverse(partial, nullptr);
  timer.end_exposed();
  if (overlap_) {
    spmm(step.adjacency.own_t, g, out, false);
    timer.begin_exposed();
    step.halo->finish_reverse(out, nullptr);
    timer.end_exposed();
  } else {
    std::fill(out.data, out.data + n * f, 0.0f);
    timer.begin_exposed();
    step.halo->finish_reverse(out, nullptr);
    timer.end_exposed();
    spmm(step.adjacency.own_t, g, out, true);
  }
  timer.end_total();
}

}  // namespace halogen::nn
