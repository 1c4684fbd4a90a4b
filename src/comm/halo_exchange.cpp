#include "comm/halo_exchange.h"

#include "core/error.h"
#include "core/timer.h"

namespace halogen::comm {

HaloExchange::HaloExchange(Communicator& comm, const graph::HaloPlan& plan, int64_t num_owned, int64_t max_width)
    : comm_(comm), num_owned_(num_owned), num_halo_(plan.num_halo()), max_width_(max_width),
      send_offsets_(plan.send_offsets), recv_offsets_(plan.recv_offsets) {
  const int size = comm.size();
  if (send_offsets_.empty()) send_offsets_.assign(size + 1, 0);
  if (recv_offsets_.empty()) recv_offsets_.assign(size + 1, 0);
  HALOGEN_ASSERT(static_cast<int>(send_offsets_.size()) == size + 1, "send_offsets has %zu entries for %d ranks",
                 send_offsets_.size(), size);
  HALOGEN_ASSERT(static_cast<int>(recv_offsets_.size()) == size + 1);
  HALOGEN_ASSERT(recv_offsets_.back() == num_halo_);
  HALOGEN_ASSERT(send_offsets_.back() == static_cast<int64_t>(plan.send_idx.size()));
  HALOGEN_ASSERT(send_offsets_[comm.rank() + 1] == send_offsets_[comm.rank()] &&
                 recv_offsets_[comm.rank() + 1] == recv_offsets_[comm.rank()], "a rank sends nothing to itself");
  const int64_t num_send = send_offsets_.back();
  for (int32_t row : plan.send_idx)
    HALOGEN_ASSERT(row >= 0 && row < num_owned, "send row %d of %lld owned", row, (long long)num_owned);
  send_idx_ = Buffer<int32_t>(num_send, comm.device());
  send_idx_.copy_from_host(plan.send_idx.data(), num_send);
  staging_ = Tensor(num_send, max_width, comm.device());
}

int64_t HaloExchange::buffer_bytes(int64_t num_send, int64_t max_width) {
  return num_send * static_cast<int64_t>(sizeof(int32_t)) + num_send * max_width * static_cast<int64_t>(sizeof(float));
}

void HaloExchange::start_forward(Matrix<float> x, kernels::Stream stream) {
  HALOGEN_ASSERT(!in_flight_, "one exchange at a time");
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.stride == x.cols && x.cols <= max_width_,
                 "x is %lld x %lld (stride %lld)", (long long)x.rows, (long long)x.cols, (long long)x.stride);
  started_at_ = wall_seconds();
  const int64_t f = x.cols;
  width_ = f;
  bf16_ = false;
  const int64_t num_send = send_offsets_.back();
  Matrix<float> packed{staging_.data(), num_send, f, f, staging_.device()};
  if (num_send > 0) {
    kernels::gather_rows(x.slice_rows(0, num_owned_), Span<const int32_t>{send_idx_.data(), num_send, send_idx_.device()},
                         packed, stream);
  }
  std::vector<Message> sends, receives;
  for (int q = 0; q < comm_.size(); ++q) {
    const int64_t s0 = send_offsets_[q], s1 = send_offsets_[q + 1];
    if (s1 > s0) sends.push_back(Message{q, packed.row(s0), (s1 - s0) * f});
    const int64_t r0 = recv_offsets_[q], r1 = recv_offsets_[q + 1];
    if (r1 > r0) receives.push_back(Message{q, x.row(num_owned_ + r0), (r1 - r0) * f});
  }
  stats_.bytes_sent += num_send * f * static_cast<int64_t>(sizeof(float));
  in_flight_ = comm_.start_exchange(sends, receives, stream);
  stats_.exposed_ms += 1e3 * (wall_seconds() - started_at_);
}

void HaloExchange::start_forward(Matrix<Bf16> x, kernels::Stream stream) {
  HALOGEN_ASSERT(!in_flight_, "one exchange at a time");
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.stride == bf16_stride(x.cols) && x.cols <= max_width_,
                 "x is %lld x %lld (stride %lld)", (long long)x.rows, (long long)x.cols, (long long)x.stride);
  started_at_ = wall_seconds();
  const int64_t stride = x.stride, words = stride / 2;  // per row
  width_ = x.cols;
  bf16_ = true;
  const int64_t num_send = send_offsets_.back();
  // The staging buffer holds (num_send, max_width) floats, at least (num_send, stride) BF16.
  Bf16* packed = reinterpret_cast<Bf16*>(staging_.data());
  if (num_send > 0) {
    kernels::gather_rows_bf16(x.slice_rows(0, num_owned_),
                              Span<const int32_t>{send_idx_.data(), num_send, send_idx_.device()},
                              Matrix<Bf16>{packed, num_send, x.cols, stride, staging_.device()}, stream);
  }
  // The communicator moves 4-byte words; a row of an even stride is stride / 2 of them.
  float* packed_words = staging_.data();
  float* x_words = reinterpret_cast<float*>(x.data);
  std::vector<Message> sends, receives;
  for (int q = 0; q < comm_.size(); ++q) {
    const int64_t s0 = send_offsets_[q], s1 = send_offsets_[q + 1];
    if (s1 > s0) sends.push_back(Message{q, packed_words + s0 * words, (s1 - s0) * words});
    const int64_t r0 = recv_offsets_[q], r1 = recv_offsets_[q + 1];
    if (r1 > r0) receives.push_back(Message{q, x_words + (num_owned_ + r0) * words, (r1 - r0) * words});
  }
  stats_.bytes_sent += num_send * stride * static_cast<int64_t>(sizeof(Bf16));
  in_flight_ = comm_.start_exchange(sends, receives, stream);
  stats_.exposed_ms += 1e3 * (wall_seconds() - started_at_);
}

void HaloExchange::start_reverse(Matrix<const Bf16> partial, kernels::Stream stream) {
  HALOGEN_ASSERT(!in_flight_, "one exchange at a time");
  HALOGEN_ASSERT(partial.rows == num_halo_ && partial.stride == bf16_stride(partial.cols) &&
                 partial.cols <= max_width_);
  started_at_ = wall_seconds();
  const int64_t stride = partial.stride, words = stride / 2;
  width_ = partial.cols;
  bf16_ = true;
  // The communicator never writes through a send's pointer.
  float* partial_words = reinterpret_cast<float*>(const_cast<Bf16*>(partial.data));
  std::vector<Message> sends, receives;
  for (int q = 0; q < comm_.size(); ++q) {
    const int64_t r0 = recv_offsets_[q], r1 = recv_offsets_[q + 1];
    if (r1 > r0) sends.push_back(Message{q, partial_words + r0 * words, (r1 - r0) * words});
    const int64_t s0 = send_offsets_[q], s1 = send_offsets_[q + 1];
    if (s1 > s0) receives.push_back(Message{q, staging_.data() + s0 * words, (s1 - s0) * words});
  }
  stats_.bytes_sent += num_halo_ * stride * static_cast<int64_t>(sizeof(Bf16));
  in_flight_ = comm_.start_exchange(sends, receives, stream);
  stats_.exposed_ms += 1e3 * (wall_seconds() - started_at_);
}

void HaloExchange::finish_forward(kernels::Stream stream) {
  HALOGEN_ASSERT(in_flight_ != nullptr);
  const double begin = wall_seconds();
  comm_.wait(std::move(in_flight_), stream);
  const double end = wall_seconds();
  stats_.exposed_ms += 1e3 * (end - begin);
  stats_.total_ms += 1e3 * (end - started_at_);
}

void HaloExchange::start_reverse(Matrix<const float> partial, kernels::Stream stream) {
  HALOGEN_ASSERT(!in_flight_, "one exchange at a time");
  HALOGEN_ASSERT(partial.rows == num_halo_ && partial.stride == partial.cols && partial.cols <= max_width_);
  started_at_ = wall_seconds();
  const int64_t f = partial.cols;
  width_ = f;
  bf16_ = false;
  std::vector<Message> sends, receives;
  for (int q = 0; q < comm_.size(); ++q) {
    const int64_t r0 = recv_offsets_[q], r1 = recv_offsets_[q + 1];
    // The communicator never writes through a send's pointer.
    if (r1 > r0) sends.push_back(Message{q, const_cast<float*>(partial.row(r0)), (r1 - r0) * f});
    const int64_t s0 = send_offsets_[q], s1 = send_offsets_[q + 1];
    if (s1 > s0) receives.push_back(Message{q, staging_.data() + s0 * f, (s1 - s0) * f});
  }
  stats_.bytes_sent += num_halo_ * f * static_cast<int64_t>(sizeof(float));
  in_flight_ = comm_.start_exchange(sends, receives, stream);
  stats_.exposed_ms += 1e3 * (wall_seconds() - started_at_);
}

void HaloExchange::finish_reverse(Matrix<float> grad_own, kernels::Stream stream) {
  HALOGEN_ASSERT(in_flight_ != nullptr);
  HALOGEN_ASSERT(grad_own.rows == num_owned_ && grad_own.cols == width_);
  const double begin = wall_seconds();
  comm_.wait(std::move(in_flight_), stream);
  // One scatter per peer, in peer order: a row sent to several peers gets their sums back in the same order on
  // every backend and every run (the GPU kernel adds with atomics, so one scatter over all peers would sum a
  // row's duplicates in whatever order its threads ran). Within a peer's part the rows are distinct.
  for (int q = 0; q < comm_.size(); ++q) {
    const int64_t s0 = send_offsets_[q], s1 = send_offsets_[q + 1];
    if (s1 == s0) continue;
    const Span<const int32_t> rows{send_idx_.data() + s0, s1 - s0, send_idx_.device()};
    if (bf16_) {
      const int64_t stride = bf16_stride(width_);
      const Bf16* staged = reinterpret_cast<const Bf16*>(staging_.data());
      kernels::scatter_add_rows_bf16(Matrix<const Bf16>{staged + s0 * stride, s1 - s0, width_, stride, staging_.device()},
                                     rows, grad_own, stream);
    } else {
      Matrix<const float> received{staging_.data() + s0 * width_, s1 - s0, width_, width_, staging_.device()};
      kernels::scatter_add_rows(received, rows, grad_own, stream);
    }
  }
  const double end = wall_seconds();
  stats_.exposed_ms += 1e3 * (end - begin);
  stats_.total_ms += 1e3 * (end - started_at_);
}

}  // namespace halogen::comm
