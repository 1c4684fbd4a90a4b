#include "nn/distributed_adjacency.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {
namespace {

// HALOGEN_HALO_PROGRESS=0 turns off the progress calls during the local product (for measurements: docs/train.md).
bool progress_calls_enabled() {
  static const bool enabled = [] {
    const char* text = std::getenv("HALOGEN_HALO_PROGRESS");
    return text == nullptr || std::strcmp(text, "0") != 0;
  }();
  return enabled;
}

// An empty CSR: the stored A_own^T of a symmetric A_own (a reference, so that choosing it copies nothing).
const graph::LocalCsr& no_matrix() {
  static const graph::LocalCsr empty;
  return empty;
}

void progress_exchange(void* exchange) { static_cast<comm::HaloExchange*>(exchange)->progress(); }

}  // namespace

DistributedAdjacency::DistributedAdjacency(comm::Communicator& comm, const graph::LocalGraph& local,
                                           const graph::HaloPlan& plan, int64_t max_width, Device device,
                                           kernels::Stream stream, bool bf16_messages)
    : comm_(comm), num_owned_(local.num_owned), num_halo_(local.num_halo), max_width_(max_width), device_(device),
      stream_(stream), own_(local.a_own, device), halo_(local.a_halo, device),
      own_t_(local.a_own_symmetric ? no_matrix() : local.a_own_t, device), halo_t_(local.a_halo_t, device),
      own_symmetric_(local.a_own_symmetric) {
  HALOGEN_ASSERT(comm.device() == device, "the adjacency lives on %s but the communicator moves %s buffers",
                 device_name(device), device_name(comm.device()));
  HALOGEN_ASSERT(max_width >= 0);
  HALOGEN_ASSERT(plan.num_halo() == num_halo_, "the plan has %lld halo rows, the local graph %lld",
                 (long long)plan.num_halo(), (long long)num_halo_);
  exchange_ = std::make_unique<comm::HaloExchange>(comm, plan, num_owned_, max_width);
  partial_ = Tensor(num_halo_, max_width, device);
  bf16_messages_ = bf16_messages;
  if (bf16_messages) partial_bf16_ = Buffer<Bf16>(num_halo_, comm::HaloExchange::bf16_stride(max_width), device);
  // Factors that come from the global degrees (gcn: a row and a column factor, the same vertex's equal on every
  // rank): the forward may scale its input. A transpose whose two parts share one column factor (over the owned
  // columns) may too.
  const graph::LocalCsr& own_t = local.own_transpose();
  scale_forward_input_ = own_.row_scaled() && own_.col_scale().size == num_owned_ && num_owned_ > 0 &&
                         (num_halo_ == 0 || halo_.col_scale().size == num_halo_);
  scale_transpose_input_ = own_transpose().col_scale().size == num_owned_ && num_owned_ > 0 &&
                           (num_halo_ == 0 || local.a_halo_t.col_scale == own_t.col_scale);
}

int64_t DistributedAdjacency::bytes_for(int64_t num_owned, int64_t num_halo, int64_t entries,
                                        int64_t num_send, int64_t max_width, ValueLayout layout,
                                        Device device) {
  return matrix_bytes_for(num_owned, num_halo, entries, 0, false, layout, device) +
         exchange_bytes_for(num_halo, num_send, max_width);
}

int64_t DistributedAdjacency::matrix_bytes_for(int64_t num_owned, int64_t num_halo, int64_t entries,
                                               int64_t halo_entries, bool own_symmetric, ValueLayout layout,
                                               Device device) {
  // A_own (n x n), A_halo (n x h), A_own^T (n x n; empty, 0 x 0, when A_own is symmetric), A_halo^T (h x n).
  const int64_t n = num_owned, h = num_halo, own_entries = entries - halo_entries;
  const ValueLayout back = transposed(layout);
  return DeviceCsr::bytes_for(n, n, own_entries, layout, device) +
         DeviceCsr::bytes_for(n, h, halo_entries, layout, device) +
         (own_symmetric ? DeviceCsr::bytes_for(0, 0, 0, ValueLayout::none, device)
                        : DeviceCsr::bytes_for(n, n, own_entries, back, device)) +
         DeviceCsr::bytes_for(h, n, halo_entries, back, device);
}

int64_t DistributedAdjacency::exchange_bytes_for(int64_t num_halo, int64_t num_send, int64_t max_width,
                                                 bool bf16_messages) {
  const int64_t bf16_partial =
      bf16_messages ? num_halo * comm::HaloExchange::bf16_stride(max_width) * static_cast<int64_t>(sizeof(Bf16)) : 0;
  return num_halo * max_width * static_cast<int64_t>(sizeof(float)) + bf16_partial +
         comm::HaloExchange::buffer_bytes(num_send, max_width);
}

void DistributedAdjacency::start_reverse(Matrix<const float> partial) {
  if (!bf16_messages_) {
    exchange_->start_reverse(partial, stream_);
    return;
  }
  // Rounded to BF16 for the wire (packing, timed by the callers as exposed exchange time).
  const int64_t width = partial.cols;
  const Matrix<Bf16> rounded{partial_bf16_.data(), num_halo_, width, comm::HaloExchange::bf16_stride(width), device_};
  if (num_halo_ > 0) kernels::convert_to_bf16(partial, rounded, stream_);
  exchange_->start_reverse(Matrix<const Bf16>(rounded), stream_);
}

bool DistributedAdjacency::moves_rows() const { return exchange_->num_send() > 0 || num_halo_ > 0; }

void DistributedAdjacency::begin(Phase phase) {
  if (clock_ != nullptr) clock_->begin(phase, stream_);
}

void DistributedAdjacency::end(Phase phase) {
  if (clock_ != nullptr) clock_->end(phase, stream_);
}

// out "=" (or "+=") a x, timed; skips empty products (a rank without halo has an A_halo with no entries).
// `while_exchanging`: this rank's exchange is in flight (overlap), so on the CPU the product calls MPI progress
// between its row chunks (kernels::ProgressHook): over a network, the messages move during the product.
void DistributedAdjacency::product(const DeviceCsr& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
                                   bool while_exchanging, bool input_scaled) {
  if (out.rows == 0 || out.cols == 0) return;
  if (accumulate && a.nnz() == 0) return;
  begin(Phase::spmm);
  if (while_exchanging && device_ == Device::cpu && moves_rows() && progress_calls_enabled()) {
    kernels::ProgressHook hook(&progress_exchange, exchange_.get());
    kernels::spmm(a.view(input_scaled), x, out, accumulate, stream_);
  } else {
    kernels::spmm(a.view(input_scaled), x, out, accumulate, stream_);
  }
  end(Phase::spmm);
}

void DistributedAdjacency::product(const DeviceCsr& a, Matrix<const Bf16> x, Matrix<float> out, bool accumulate,
                                   bool while_exchanging, bool input_scaled) {
  if (out.rows == 0 || out.cols == 0) return;
  if (accumulate && a.nnz() == 0) return;
  begin(Phase::spmm);
  if (while_exchanging && device_ == Device::cpu && moves_rows() && progress_calls_enabled()) {
    kernels::ProgressHook hook(&progress_exchange, exchange_.get());
    kernels::spmm_bf16(a.view(input_scaled), x, out, accumulate, stream_);
  } else {
    kernels::spmm_bf16(a.view(input_scaled), x, out, accumulate, stream_);
  }
  end(Phase::spmm);
}

void DistributedAdjacency::forward_bf16(Matrix<Bf16> x, Matrix<float> out, OverlapWork extra) {
  forward_bf16_impl(x, out, extra, false);
}

Matrix<Bf16> DistributedAdjacency::staging_view(Matrix<Bf16> staging, int64_t width) const {
  const Matrix<Bf16> view{staging.data, num_owned_ + num_halo_, width, comm::HaloExchange::bf16_stride(width),
                          staging.device};
  HALOGEN_ASSERT(staging.rows == view.rows && view.stride <= staging.stride,
                 "BF16 staging buffer of %lld rows, stride %lld: expected %lld rows, stride >= %lld",
                 (long long)staging.rows, (long long)staging.stride, (long long)view.rows, (long long)view.stride);
  return view;
}

void DistributedAdjacency::forward_rounding(Matrix<float> x_own, Matrix<Bf16> staging, Matrix<float> out,
                                            bool scratch, OverlapWork extra) {
  HALOGEN_ASSERT(x_own.rows == num_owned_, "forward_rounding: x has %lld rows, expected %lld",
                 (long long)x_own.rows, (long long)num_owned_);
  const Matrix<Bf16> x = staging_view(staging, x_own.cols);
  const bool scale = scratch && scale_forward_input_;
  if (num_owned_ > 0) {
    begin(Phase::elementwise);
    if (scale)  // bitwise scale_rows then convert_to_bf16, in one pass
      kernels::scale_round_bf16(own_.col_scale(), x_own, x.slice_rows(0, num_owned_), stream_);
    else
      kernels::convert_to_bf16(x_own, x.slice_rows(0, num_owned_), stream_);
    end(Phase::elementwise);
  }
  forward_bf16_impl(x, out, extra, scale);
}

void DistributedAdjacency::forward_bf16_input(Matrix<const Bf16> x_own, Matrix<Bf16> staging, Matrix<float> out,
                                              OverlapWork extra) {
  HALOGEN_ASSERT(x_own.rows == num_owned_, "forward_bf16_input: x has %lld rows, expected %lld",
                 (long long)x_own.rows, (long long)num_owned_);
  const Matrix<Bf16> x = staging_view(staging, x_own.cols);
  if (num_owned_ > 0) {
    begin(Phase::elementwise);
    // No dropout and no scale: an exact copy into the staging rows (their stride differs).
    kernels::dropout_scale_round_bf16(x_own, Span<const int64_t>{}, kernels::EpilogueParams{false, 0.0f, 0, 0},
                                      Span<const float>{}, x.slice_rows(0, num_owned_), stream_);
    end(Phase::elementwise);
  }
  forward_bf16_impl(x, out, extra, /*input_scaled=*/false);
}

Matrix<Bf16> DistributedAdjacency::staged_input_rows(Matrix<Bf16> staging, int64_t width) const {
  return staging_view(staging, width).slice_rows(0, num_owned_);
}

Span<const float> DistributedAdjacency::staged_input_scale() const {
  return scale_forward_input_ ? own_.col_scale() : Span<const float>{};
}

void DistributedAdjacency::forward_staged(Matrix<Bf16> staging, int64_t width, Matrix<float> out,
                                          OverlapWork extra) {
  forward_bf16_impl(staging_view(staging, width), out, extra, scale_forward_input_);
}

void DistributedAdjacency::forward_bf16_impl(Matrix<Bf16> x, Matrix<float> out, OverlapWork extra,
                                             bool input_scaled) {
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.stride == comm::HaloExchange::bf16_stride(x.cols) &&
                     x.cols <= max_width_,
                 "forward_bf16: x is %lld x %lld (stride %lld), expected %lld rows, width <= %lld", (long long)x.rows,
                 (long long)x.cols, (long long)x.stride, (long long)(num_owned_ + num_halo_), (long long)max_width_);
  HALOGEN_ASSERT(out.rows == num_owned_ && out.cols == x.cols, "forward_bf16: out is %lld x %lld",
                 (long long)out.rows, (long long)out.cols);
  const int64_t n = num_owned_;
  if (moves_rows()) begin(Phase::halo_total);
  begin(Phase::halo_exposed);
  exchange_->start_forward(x, stream_);
  end(Phase::halo_exposed);
  if (!overlap_) finish_forward();
  product(own_, x.slice_rows(0, n), out, false, overlap_, input_scaled);
  if (extra) extra();
  if (overlap_) finish_forward();
  product(halo_, x.slice_rows(n, n + num_halo_), out, true, false, input_scaled);
}

void DistributedAdjacency::check_forward(Matrix<const float> x, Matrix<const float> out) const {
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.stride == x.cols && x.cols <= max_width_,
                 "forward: x is %lld x %lld (stride %lld), expected %lld rows, width <= %lld", (long long)x.rows,
                 (long long)x.cols, (long long)x.stride, (long long)(num_owned_ + num_halo_), (long long)max_width_);
  HALOGEN_ASSERT(out.rows == num_owned_ && out.cols == x.cols, "forward: out is %lld x %lld", (long long)out.rows,
                 (long long)out.cols);
}

void DistributedAdjacency::start_forward(Matrix<float> x) {
  if (moves_rows()) begin(Phase::halo_total);
  begin(Phase::halo_exposed);
  exchange_->start_forward(x, stream_);
  end(Phase::halo_exposed);
}

void DistributedAdjacency::finish_forward() {
  begin(Phase::halo_exposed);
  exchange_->finish_forward(stream_);
  end(Phase::halo_exposed);
  if (moves_rows()) end(Phase::halo_total);
}

void DistributedAdjacency::forward(Matrix<float> x, Matrix<float> out, OverlapWork extra) {
  forward_impl(x, out, extra, false);
}

void DistributedAdjacency::forward_overwriting(Matrix<float> x, Matrix<float> out, OverlapWork extra) {
  if (scale_forward_input_) {  // before the exchange starts: the rows it sends go out scaled
    check_forward(x, out);
    begin(Phase::spmm);
    kernels::scale_rows(own_.col_scale(), x.slice_rows(0, num_owned_), stream_);
    end(Phase::spmm);
  }
  forward_impl(x, out, extra, scale_forward_input_);
}

void DistributedAdjacency::forward_impl(Matrix<float> x, Matrix<float> out, OverlapWork extra, bool input_scaled) {
  check_forward(x, out);
  const int64_t n = num_owned_;
  start_forward(x);
  if (!overlap_) finish_forward();
  product(own_, x.slice_rows(0, n), out, false, overlap_, input_scaled);
  if (extra) extra();
  if (overlap_) finish_forward();
  product(halo_, x.slice_rows(n, n + num_halo_), out, true, false, input_scaled);
}

void DistributedAdjacency::forward_local(Matrix<const float> x, Matrix<float> out, OverlapWork extra) {
  check_forward(x, out);
  const int64_t n = num_owned_;
  product(own_, x.slice_rows(0, n), out, false);
  if (extra) extra();
  product(halo_, x.slice_rows(n, n + num_halo_), out, true);
}

void DistributedAdjacency::transpose(Matrix<const float> g, Matrix<float> out, OverlapWork extra) {
  transpose_impl(g, out, extra, false);
}

void DistributedAdjacency::transpose_overwriting(Matrix<float> g, Matrix<float> out, OverlapWork extra) {
  if (scale_transpose_input_) {
    HALOGEN_ASSERT(g.rows == num_owned_, "transpose: g has %lld rows, expected %lld", (long long)g.rows,
                   (long long)num_owned_);
    begin(Phase::spmm);
    kernels::scale_rows(own_transpose().col_scale(), g, stream_);
    end(Phase::spmm);
  }
  transpose_impl(g, out, extra, scale_transpose_input_);
}

void DistributedAdjacency::transpose_impl(Matrix<const float> g, Matrix<float> out, OverlapWork extra,
                                          bool input_scaled) {
  const int64_t n = num_owned_, width = g.cols;
  HALOGEN_ASSERT(g.rows == n && out.rows == n && out.cols == width && out.stride == width && width <= max_width_,
                 "transpose: g is %lld x %lld, out %lld x %lld (stride %lld)", (long long)g.rows, (long long)width,
                 (long long)out.rows, (long long)out.cols, (long long)out.stride);
  // The halo columns' share of S^T g belongs to the owners of those vertices: computed here, sent back.
  Matrix<float> partial{partial_.data(), num_halo_, width, width, device_};
  product(halo_t_, g, partial, false, false, input_scaled);
  if (moves_rows()) begin(Phase::halo_total);
  begin(Phase::halo_exposed);
  start_reverse(partial);
  end(Phase::halo_exposed);
  auto receive = [&] {  // the owners' side: sums other ranks computed for our rows, scatter-added into out
    begin(Phase::halo_exposed);
    exchange_->finish_reverse(out, stream_);
    end(Phase::halo_exposed);
    if (moves_rows()) end(Phase::halo_total);
  };
  if (overlap_) {
    product(own_transpose(), g, out, false, true, input_scaled);
    if (extra) extra();
    receive();
  } else {
    kernels::fill(Span<float>{out.data, n * width, out.device}, 0.0f, stream_);
    receive();
    product(own_transpose(), g, out, true, false, input_scaled);
    if (extra) extra();
  }
}

void DistributedAdjacency::gather_halo(Matrix<float> x, OverlapWork extra) {
  HALOGEN_ASSERT(x.rows == num_owned_ + num_halo_ && x.stride == x.cols && x.cols <= max_width_,
                 "gather_halo: x is %lld x %lld (stride %lld), expected %lld rows, width <= %lld", (long long)x.rows,
                 (long long)x.cols, (long long)x.stride, (long long)(num_owned_ + num_halo_), (long long)max_width_);
  start_forward(x);
  if (!overlap_) finish_forward();
  if (extra) extra();
  if (overlap_) finish_forward();
}

void DistributedAdjacency::gather_halo_rounding(Matrix<float> x, Matrix<Bf16> staging_buffer, OverlapWork extra) {
  const int64_t n = num_owned_;
  HALOGEN_ASSERT(x.rows == n + num_halo_ && x.stride == x.cols && x.cols <= max_width_,
                 "gather_halo_rounding: x is %lld x %lld (stride %lld), expected %lld rows, width <= %lld",
                 (long long)x.rows, (long long)x.cols, (long long)x.stride, (long long)(n + num_halo_),
                 (long long)max_width_);
  const Matrix<Bf16> staging = staging_view(staging_buffer, x.cols);
  if (n > 0) {
    begin(Phase::elementwise);
    kernels::convert_to_bf16(x.slice_rows(0, n), staging.slice_rows(0, n), stream_);
    kernels::convert_from_bf16(staging.slice_rows(0, n), x.slice_rows(0, n), stream_);
    end(Phase::elementwise);
  }
  if (moves_rows()) begin(Phase::halo_total);
  begin(Phase::halo_exposed);
  exchange_->start_forward(staging, stream_);
  end(Phase::halo_exposed);
  if (!overlap_) finish_forward();
  if (extra) extra();
  if (overlap_) finish_forward();
  if (num_halo_ > 0) {  // widened (exactly) into x's halo rows
    begin(Phase::halo_exposed);
    kernels::convert_from_bf16(staging.slice_rows(n, n + num_halo_), x.slice_rows(n, n + num_halo_), stream_);
    end(Phase::halo_exposed);
  }
}

void DistributedAdjacency::scatter_halo(Matrix<const float> partial, Matrix<float> out, OverlapWork extra) {
  HALOGEN_ASSERT(partial.rows == num_halo_ && out.rows == num_owned_ && out.cols == partial.cols &&
                     out.stride == out.cols && (partial.rows <= 1 || partial.stride == partial.cols) &&
                     partial.cols <= max_width_,
                 "scatter_halo: partial is %lld x %lld, out %lld x %lld (stride %lld)", (long long)partial.rows,
                 (long long)partial.cols, (long long)out.rows, (long long)out.cols, (long long)out.stride);
  if (moves_rows()) begin(Phase::halo_total);
  begin(Phase::halo_exposed);
  start_reverse(partial);
  end(Phase::halo_exposed);
  auto receive = [&] {
    begin(Phase::halo_exposed);
    exchange_->finish_reverse(out, stream_);
    end(Phase::halo_exposed);
    if (moves_rows()) end(Phase::halo_total);
  };
  if (!overlap_) receive();
  if (extra) extra();
  if (overlap_) receive();
}

void forward_pipelined(const std::vector<DistributedAdjacency*>& adjacencies,
                       FunctionRef<Matrix<float>(int64_t)> input_of, const std::vector<Matrix<float>>& out) {
  const int64_t m = static_cast<int64_t>(adjacencies.size());
  HALOGEN_ASSERT(static_cast<int64_t>(out.size()) == m);
  if (m == 0) return;
  if (m == 1 || !adjacencies[0]->overlap()) {
    for (int64_t i = 0; i < m; ++i) adjacencies[i]->forward(input_of(i), out[i]);
    return;
  }
  for (int64_t i = 1; i < m; ++i)
    HALOGEN_ASSERT(adjacencies[i] != adjacencies[i - 1], "consecutive steps of a pipelined pass must differ");
  // The whole pass is one halo_total interval (the exchanges overlap each other and the products); every start
  // and finish is exposed time.
  DistributedAdjacency& first = *adjacencies[0];
  first.begin(Phase::halo_total);
  std::vector<Matrix<float>> x(static_cast<size_t>(m));
  auto post = [&](int64_t i) {
    DistributedAdjacency& a = *adjacencies[i];
    x[i] = input_of(i);
    a.check_forward(x[i], out[i]);
    a.begin(Phase::halo_exposed);
    a.exchange_->start_forward(x[i], a.stream_);
    a.end(Phase::halo_exposed);
  };
  post(0);
  for (int64_t i = 0; i < m; ++i) {
    DistributedAdjacency& a = *adjacencies[i];
    if (i + 1 < m) post(i + 1);
    const int64_t n = a.num_owned_;
    a.product(a.own_, x[i].slice_rows(0, n), out[i], false, true);
    a.begin(Phase::halo_exposed);
    a.exchange_->finish_forward(a.stream_);
    a.end(Phase::halo_exposed);
    a.product(a.halo_, x[i].slice_rows(n, n + a.num_halo_), out[i], true);
  }
  first.end(Phase::halo_total);
}

}  // namespace halogen::nn
