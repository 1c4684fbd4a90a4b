#include "nn/gconvgru.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/format.h"
#include "kernels/ops.h"
#include "nn/relu_linear_head.h"
#include "nn/temporal_registry.h"

namespace halogen::nn {
namespace {

// GConvGRU (Seo et al. 2018, as PyTorch Geometric Temporal's GConvGRU with ChebConv, normalization "sym",
// lambda_max = 2). With ChebConv_K(v) = sum_{k<K} T_k(v) Theta_k + b, T_0 = v, T_1 = L~ v,
// T_k = 2 L~ T_{k-1} - T_{k-2} and L~ = L~_t = -D^-1/2 A_t D^-1/2 (SnapshotSequence, chebyshev):
//   Z = sigma(Ch_xz(x_t) + Ch_hz(H)),  R = sigma(Ch_xr(x_t) + Ch_hr(H)),
//   H~ = tanh(Ch_xh(x_t) + Ch_hh(H o R)),  H_t = Z o H + (1 - Z) o H~,  y_t = relu(H_t) W_head + b_head.
// Six ChebConvs, each with its own bias (as PyG). The Chebyshev basis of x_t is shared by the three x-convs and
// that of H by the z and r convs, so per step over the n rows (basis blocks side by side, Thetas stacked):
//   Tx  = [T_0 x | .. | T_{K-1} x]   (n, K in)   pre[z|r|h] = Tx Wx + bx          Wx  (K in, 3h)
//   TH  = [T_0 H | .. ]              (n, K h)    pre[z|r]  += TH Whzr + bhzr       Whzr (K h, 2h)
//   THR = [T_0 (HoR) | .. ]          (n, K h)    pre[h]    += THR Whh + bhh        Whh (K h, h)
// Each T_k (k >= 1) of H and of H o R is one exchange of h columns; x's K-1 exchanges can be prefetched for a
// whole window (aggregate_many). Backward runs the Chebyshev recursion's adjoint with L~^T (aggregate_transpose,
// which carries the other ranks' terms): for k = K-1..1: A_{k-1} += 2 L~^T A_k (k >= 2; L~^T A_1 for k = 1),
// A_{k-2} -= A_k, giving dLoss/dv in block 0. x_t is not trainable: its basis needs no backward exchange.
//
// Parameters (store order; the stacked Thetas of one group are consecutive tensors, hence one matrix):
//   gconvgru.conv_x.theta{k}    (in, 3h)  columns z | r | h     gconvgru.conv_x_{z,r,h}.bias  (1, h) each
//   gconvgru.conv_h_zr.theta{k} (h, 2h)   columns z | r         gconvgru.conv_h_{z,r}.bias    (1, h) each
//   gconvgru.conv_h_h.theta{k}  (h, h)                          gconvgru.conv_h_h.bias        (1, h)
//   head.weight, head.bias (ReluLinearHead, layer 1)
// Weights are rescaled after the store's Glorot init so that every Theta_k of every gate has PyG's bound
// sqrt(6 / (fan_in + h)) (the store's bound uses the stacked tensor's columns).
class GConvGru final : public TemporalModel {
 public:
  GConvGru(const TemporalModelConfig& config, int64_t num_owned)
      : config_(config),
        n_(num_owned),
        in_(config.in),
        h_(config.hidden),
        k_(config.cheb_k),
        stream_(config.stream),
        head_(init_store(), 1, config.hidden, config.out) {
    const Device device = config.device;
    store_.allocate(device);
    store_.initialize(config.seed);
    rescale_to_pyg_glorot();
    head_.allocate(n_, config.max_window, device, stream_);
    const int64_t slots = config.max_window + 1;  // the last slot serves unrecorded steps
    tx_ = Tensor(slots * n_, k_ * in_, device);
    th_ = Tensor(slots * n_, k_ * h_, device);
    thr_ = Tensor(slots * n_, k_ * h_, device);
    gates_ = Tensor(slots * n_, 3 * h_, device);  // Z | R | H~
    state_ = Tensor(n_, h_, device);
    pre_ = Tensor(n_, 3 * h_, device);
    grad_state_ = Tensor(n_, h_, device);
    grad_head_ = Tensor(n_, h_, device);
    grad_pre_ = Tensor(n_, 3 * h_, device);
    grad_basis_ = Tensor(n_, k_ * h_, device);
    transposed_ = Tensor(n_, h_, device);
    prefetched_.reserve(config.max_window);
    prefetch_in_.reserve(config.max_window);
    prefetch_out_.reserve(config.max_window);
    reset_state();
  }

  ParameterStore& store() override { return store_; }
  const TemporalModelConfig& config() const override { return config_; }

  void reset_state() override {
    kernels::fill(state_.span(), 0.0f, stream_);
    begin_window();
  }
  void begin_window() override {
    recorded_ = 0;
    prefetched_.clear();
    kernels::fill(grad_state_.span(), 0.0f, stream_);
  }

  void prefetch(SnapshotSequence& seq, const std::vector<int64_t>& snapshots,
                const std::vector<Matrix<const float>>& x) override {
    HALOGEN_ASSERT(recorded_ == 0 && static_cast<int64_t>(snapshots.size()) <= config_.max_window);
    HALOGEN_ASSERT(x.size() == snapshots.size());
    for (size_t i = 1; i < snapshots.size(); ++i) {
      if (snapshots[i] == snapshots[i - 1]) return;  // aggregate_many needs distinct neighbours: no prefetch
    }
    const int64_t m = static_cast<int64_t>(snapshots.size());
    for (int64_t i = 0; i < m; ++i) {
      HALOGEN_ASSERT(x[i].rows == n_ && x[i].cols == in_);
      copy_rows(x[i], block(slot_rows(tx_, i), 0, in_));
    }
    for (int64_t k = 1; k < k_; ++k) {
      prefetch_in_.clear();
      prefetch_out_.clear();
      for (int64_t i = 0; i < m; ++i) {
        prefetch_in_.push_back(block(slot_rows(tx_, i), k - 1, in_));
        prefetch_out_.push_back(block(slot_rows(tx_, i), k, in_));
      }
      seq.aggregate_many(snapshots, prefetch_in_, prefetch_out_);
      if (k >= 2) {
        for (int64_t i = 0; i < m; ++i) chebyshev_combine(slot_rows(tx_, i), k, in_);
      }
    }
    prefetched_.assign(snapshots.begin(), snapshots.end());
  }

  void forward(SnapshotSequence& seq, int64_t t, Matrix<const float> x, Matrix<float> y, bool record) override {
    HALOGEN_ASSERT(x.rows == n_ && x.cols == in_ && y.rows == n_ && y.cols == config_.out);
    HALOGEN_ASSERT(!record || recorded_ < config_.max_window, "more recorded steps than max_window %lld",
                   (long long)config_.max_window);
    const int64_t slot = record ? recorded_ : config_.max_window;
    const int64_t h = h_;
    Matrix<float> tx = slot_rows(tx_, slot), th = slot_rows(th_, slot), thr = slot_rows(thr_, slot),
                  gates = slot_rows(gates_, slot);
    if (record && recorded_ < static_cast<int64_t>(prefetched_.size())) {
      HALOGEN_ASSERT(prefetched_[recorded_] == t, "step %lld was not the prefetched one", (long long)t);
    } else {
      copy_rows(x, block(tx, 0, in_));
      chebyshev_basis(seq, t, tx, in_);
    }
    Matrix<float> pre = pre_.matrix();
    gemm(tx, x_weight(false), pre, 0.0f);
    add_row(pre, bias_span(x_bias_, 3 * h));
    // Gates z, r from H's basis: Z | R = sigmoid, H o R into block 0 of its basis.
    copy_rows(state_.matrix(), block(th, 0, h));
    chebyshev_basis(seq, t, th, h);
    gemm(th, h_zr_weight(false), columns(pre, 0, 2 * h), 1.0f);
    add_row(columns(pre, 0, 2 * h), bias_span(h_zr_bias_, 2 * h));
    kernels::gru_gates(columns(pre, 0, h), columns(pre, h, h), block(th, 0, h), columns(gates, 0, h),
                       columns(gates, h, h), block(thr, 0, h), stream_);
    // Candidate from the basis of H o R: H~ = tanh, H_t = Z o H + (1 - Z) o H~.
    chebyshev_basis(seq, t, thr, h);
    gemm(thr, h_h_weight(false), columns(pre, 2 * h, h), 1.0f);
    add_row(columns(pre, 2 * h, h), bias_span(h_h_bias_, h));
    Matrix<float> state = state_.matrix();
    kernels::gru_update(columns(pre, 2 * h, h), columns(gates, 0, h), block(th, 0, h), kernels::GruMix::z_keeps_state,
                        columns(gates, 2 * h, h), state, stream_);
    head_.forward(state, y, record ? slot : -1);
    if (record) ++recorded_;
  }

  void backward(SnapshotSequence& seq, int64_t t, Matrix<const float> grad_y) override {
    HALOGEN_ASSERT(recorded_ > 0, "backward without a recorded step");
    const int64_t slot = --recorded_;
    const int64_t h = h_;
    Matrix<const float> tx = slot_rows(tx_, slot), th = slot_rows(th_, slot), thr = slot_rows(thr_, slot),
                        gates = slot_rows(gates_, slot);
    Matrix<float> grad_h = grad_head_.matrix(), grad_state = grad_state_.matrix(), grad_pre = grad_pre_.matrix(),
                  grad_basis = grad_basis_.matrix();
    head_.backward(slot, grad_y, grad_h);
    // dH_t = head + carried from step t+1; pre-activation gradients of z and h; the direct dH_prev = dH_t o Z.
    const Matrix<const float> prev = columns(th, 0, h);
    kernels::gru_update_backward(grad_h, grad_state, columns(gates, 0, h), prev, columns(gates, 2 * h, h),
                                 kernels::GruMix::z_keeps_state, columns(grad_pre, 0, h), columns(grad_pre, 2 * h, h),
                                 grad_state, stream_);
    // Candidate: pre_h = THR Whh + bhh  ->  dWhh, dbhh, d(H o R) through the basis.
    Matrix<const float> grad_pre_h = columns(grad_pre, 2 * h, h);
    gemm_grad(thr, grad_pre_h, h_h_weight(true));
    bias_grad(grad_pre_h, bias_span_grad(h_h_bias_, h));
    gemm(grad_pre_h, h_h_weight(false), grad_basis, 0.0f, false, true);
    chebyshev_adjoint(seq, t, grad_basis, h);
    kernels::gru_gates_backward(block(grad_basis, 0, h), columns(gates, h, h), prev, columns(grad_pre, h, h),
                                grad_state, stream_);
    // Gates z, r: pre_zr += TH Whzr + bhzr  ->  dWhzr, dbhzr, dH through the basis.
    Matrix<const float> grad_pre_zr = columns(grad_pre, 0, 2 * h);
    gemm_grad(th, grad_pre_zr, h_zr_weight(true));
    bias_grad(grad_pre_zr, bias_span_grad(h_zr_bias_, 2 * h));
    gemm(grad_pre_zr, h_zr_weight(false), grad_basis, 0.0f, false, true);
    chebyshev_adjoint(seq, t, grad_basis, h);
    kernels::scale_add(1.0f, block(grad_basis, 0, h), 1.0f, grad_state, stream_);
    // x-convolutions: pre = Tx Wx + bx.
    gemm_grad(tx, grad_pre, x_weight(true));
    bias_grad(grad_pre, bias_span_grad(x_bias_, 3 * h));
  }

  int64_t scratch_bytes() const override {
    const int64_t slots = config_.max_window + 1;
    return static_cast<int64_t>(sizeof(float)) *
               (slots * n_ * (k_ * in_ + 2 * k_ * h_ + 3 * h_) + n_ * (3 * h_ + 3 * h_ + 3 * h_ + k_ * h_)) +
           head_.scratch_bytes();
  }

 private:
  ParameterStore& init_store() {
    HALOGEN_ASSERT(k_ >= 1, "cheb_k must be at least 1");
    const int64_t in = in_, h = h_;
    auto thetas = [&](const std::string& conv, int64_t rows, int64_t cols) {
      int first = -1;
      for (int64_t k = 0; k < k_; ++k) {
        const int index = store_.add("gconvgru." + conv + ".theta" + std::to_string(k), 0, rows, cols, false);
        if (k == 0) first = index;
      }
      return first;
    };
    auto biases = [&](const std::string& conv, const char* gates) {
      int first = -1;
      for (const char* g = gates; *g != '\0'; ++g) {
        const int index = store_.add("gconvgru." + conv + "_" + *g + ".bias", 0, 1, h, true);
        if (g == gates) first = index;
      }
      return first;
    };
    x_theta_ = thetas("conv_x", in, 3 * h);
    x_bias_ = biases("conv_x", "zrh");
    h_zr_theta_ = thetas("conv_h_zr", h, 2 * h);
    h_zr_bias_ = biases("conv_h", "zr");
    h_h_theta_ = thetas("conv_h_h", h, h);
    h_h_bias_ = biases("conv_h", "h");
    return store_;
  }

  // The store's bound for a stacked (rows, g h) Theta is sqrt(6 / (rows + g h)); PyG's per-gate Linear has
  // sqrt(6 / (rows + h)).
  void rescale_to_pyg_glorot() {
    auto rescale = [&](Matrix<float> w, int64_t rows, int64_t gates) {
      const float factor = static_cast<float>(std::sqrt(static_cast<double>(rows + gates * h_) /
                                                        static_cast<double>(rows + h_)));
      kernels::scale_add(factor, w, 0.0f, w, stream_);
    };
    rescale(x_weight(false), in_, 3);
    rescale(h_zr_weight(false), h_, 2);
  }

  // The K stacked Thetas of a group as one (K rows, cols) matrix (consecutive tensors in the flat store).
  Matrix<float> stacked(int first, bool grad) {
    Matrix<float> m0 = grad ? store_.grad(first) : store_.param(first);
    return Matrix<float>{m0.data, k_ * m0.rows, m0.cols, m0.cols, m0.device};
  }
  Matrix<float> x_weight(bool grad) { return stacked(x_theta_, grad); }
  Matrix<float> h_zr_weight(bool grad) { return stacked(h_zr_theta_, grad); }
  Matrix<float> h_h_weight(bool grad) { return stacked(h_h_theta_, grad); }
  Span<const float> bias_span(int first, int64_t count) {
    return Span<const float>{store_.param(first).data, count, store_.params().device()};
  }
  Span<float> bias_span_grad(int first, int64_t count) {
    return Span<float>{store_.grad(first).data, count, store_.grads().device()};
  }

  // basis (n, K w) with block 0 = v: blocks k = 1..K-1 = T_k(v) under L~_t (K-1 collective exchanges).
  void chebyshev_basis(SnapshotSequence& seq, int64_t t, Matrix<float> basis, int64_t width) {
    for (int64_t k = 1; k < k_; ++k) {
      seq.aggregate(t, block(basis, k - 1, width), block(basis, k, width));
      if (k >= 2) chebyshev_combine(basis, k, width);
    }
  }
  // Block k holds L~ T_{k-1}: make it T_k = 2 L~ T_{k-1} - T_{k-2}.
  void chebyshev_combine(Matrix<float> basis, int64_t k, int64_t width) {
    kernels::scale_add(-1.0f, block(basis, k - 2, width), 2.0f, block(basis, k, width), stream_);
  }
  // grad (n, K w) holds dLoss/dT_k in block k; afterwards block 0 is dLoss/dv (the other blocks are consumed).
  void chebyshev_adjoint(SnapshotSequence& seq, int64_t t, Matrix<float> grad, int64_t width) {
    Matrix<float> transposed{transposed_.data(), n_, width, width, transposed_.device()};
    for (int64_t k = k_ - 1; k >= 1; --k) {
      seq.aggregate_transpose(t, block(grad, k, width), transposed);
      const float scale = k >= 2 ? 2.0f : 1.0f;
      kernels::scale_add(scale, transposed, 1.0f, block(grad, k - 1, width), stream_);
      if (k >= 2) kernels::scale_add(-1.0f, block(grad, k, width), 1.0f, block(grad, k - 2, width), stream_);
    }
  }

  Matrix<float> slot_rows(Tensor& t, int64_t slot) { return t.matrix().slice_rows(slot * n_, (slot + 1) * n_); }
  static Matrix<float> block(Matrix<float> m, int64_t k, int64_t width) { return columns(m, k * width, width); }
  static Matrix<float> columns(Matrix<float> m, int64_t begin, int64_t count) {
    return Matrix<float>{m.data + begin, m.rows, count, m.stride, m.device};
  }
  static Matrix<const float> columns(Matrix<const float> m, int64_t begin, int64_t count) {
    return Matrix<const float>{m.data + begin, m.rows, count, m.stride, m.device};
  }
  void copy_rows(Matrix<const float> from, Matrix<float> to) { kernels::scale_add(1.0f, from, 0.0f, to, stream_); }

  // c = op(a) op(b) + beta c over the n rows (nothing to do without rows).
  void gemm(Matrix<const float> a, Matrix<const float> b, Matrix<float> c, float beta, bool ta = false,
                   bool tb = false) {
    if (c.rows == 0) return;
    kernels::gemm(a, ta, b, tb, c, 1.0f, beta, stream_);
  }
  // grad_w += a^T g
  void gemm_grad(Matrix<const float> a, Matrix<const float> g, Matrix<float> grad_w) {
    if (a.rows == 0) return;
    kernels::gemm(a, true, g, false, grad_w, 1.0f, 1.0f, stream_);
  }
  void add_row(Matrix<float> m, Span<const float> bias) {
    if (m.rows > 0) kernels::add_bias(m, bias, stream_);
  }
  void bias_grad(Matrix<const float> g, Span<float> grad_bias) {
    if (g.rows > 0) kernels::bias_backward(g, grad_bias, stream_);
  }

  TemporalModelConfig config_;
  int64_t n_, in_, h_, k_;
  kernels::Stream stream_;
  // First tensor of each parameter group in the store (see the class comment for the order).
  int x_theta_ = -1, x_bias_ = -1, h_zr_theta_ = -1, h_zr_bias_ = -1, h_h_theta_ = -1, h_h_bias_ = -1;
  ParameterStore store_;
  ReluLinearHead head_;
  Tensor tx_, th_, thr_, gates_;  // per slot: bases of x, H (block 0 = H_prev), H o R; Z | R | H~
  Tensor state_, pre_, grad_state_, grad_head_, grad_pre_, grad_basis_, transposed_;
  int64_t recorded_ = 0;
  std::vector<int64_t> prefetched_;  // snapshots whose x bases are already in slots 0..
  std::vector<Matrix<const float>> prefetch_in_;
  std::vector<Matrix<float>> prefetch_out_;
};

}  // namespace

std::unique_ptr<TemporalModel> make_gconvgru(const TemporalModelConfig& config, int64_t num_owned) {
  HALOGEN_USER_CHECK(config.cheb_k >= 1, "GConvGRU needs --cheb-k of at least 1 (got %d)", config.cheb_k);
  return std::make_unique<GConvGru>(config, num_owned);
}

TemporalSpec gconvgru_spec() {
  auto memory = [](const TemporalModelConfig& config, int64_t width, int64_t) {
    // Caches K in + 2K h + 3h per step (scratch_bytes); x and h convolutions of three gates, K terms each.
    const int64_t k = std::max(1, config.cheb_k);
    return TemporalCellMemory{3 * k + 3, 6 * (k + 1) * (width + 1) * width, 0};
  };
  return {"gconvgru", TemporalKind::gconvgru, "GConvGRU (Seo et al.)", graph::Normalization::chebyshev,
          /*stacks_layers=*/false, TemporalTrainingDefaults{50, 0, 1.0f, 0.01f}, make_gconvgru, memory,
          [](const TemporalModelConfig& config) { return strformat(", K %d", config.cheb_k); }};
}

}  // namespace halogen::nn
