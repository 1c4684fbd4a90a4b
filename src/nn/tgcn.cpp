#include "nn/tgcn.h"

#include <algorithm>

#include "core/error.h"
#include "core/format.h"
#include "kernels/ops.h"
#include "nn/relu_linear_head.h"
#include "nn/temporal_registry.h"

namespace halogen::nn {
namespace {

// T-GCN (Zhao et al. 2019, as PyTorch Geometric Temporal's TGCN): three GCN convolutions of x_t sharing one
// product AX = Â_t x_t, C_g = AX W_g + b_g (g in z, r, h), then a GRU whose gates are linear layers on [C_g, H]:
//   Z = sigma(C_z L_z1 + H L_z2 + c_z),  R = sigma(C_r L_r1 + H L_r2 + c_r),
//   H~ = tanh(C_h L_h1 + (H o R) L_h2 + c_h),  H_t = Z o H + (1 - Z) o H~
// where L_g = [L_g1; L_g2] is the (2h, h) weight of PyG's Linear(2h, h) on the concatenation. The hidden
// state stays with its owner: one exchange per step (x_t's halo rows, width `in`).
//
// Computed with the convolution folded into the gate (same function, fewer and wider products):
//   M_g = W_g L_g1 (in, h), e_g = b_g L_g1 + c_g, so C_g L_g1 + c_g = AX M_g + e_g; per step over the n rows:
//   forward  pre = AX [M_z|M_r|M_h] + e, pre_zr += H [L_z2|L_r2], pre_h += (H o R) L_h2     (3 GEMMs)
//   backward dM = AX^T dpre, dH += dpre_zr [L_z2|L_r2]^T, d[L_z2|L_r2] = H^T dpre_zr, d(HoR), dL_h2 (5 GEMMs)
// and the chain rule to W_g, b_g, L_g1, c_g on the small matrices once per step.
class Tgcn final : public TemporalModel {
 public:
  Tgcn(const TemporalModelConfig& config, int64_t num_owned)
      : config_(config),
        n_(num_owned),
        h_(config.hidden),
        stream_(config.stream),
        head_(init_store(), 1, config.hidden, config.out) {
    const Device device = config.device;
    store_.allocate(device);
    store_.initialize(config.seed);
    head_.allocate(n_, config.max_window, device, stream_);
    const int64_t slots = config.max_window + 1;  // the last slot serves unrecorded steps
    const int64_t in = config.in, h = h_;
    ax_ = Tensor(slots * n_, in, device);
    h_prev_ = Tensor(slots * n_, h, device);
    gates_ = Tensor(slots * n_, 4 * h, device);  // Z | R | H~ | H o R
    state_ = Tensor(n_, h, device);
    pre_ = Tensor(n_, 3 * h, device);
    grad_state_ = Tensor(n_, h, device);
    grad_head_ = Tensor(n_, h, device);
    grad_pre_ = Tensor(n_, 3 * h, device);
    grad_hr_ = Tensor(n_, h, device);
    folded_ = Tensor(in, 3 * h, device);
    folded_bias_ = Tensor(1, 3 * h, device);
    bottom_zr_ = Tensor(h, 2 * h, device);
    grad_folded_ = Tensor(in, 3 * h, device);
    grad_folded_bias_ = Tensor(1, 3 * h, device);
    grad_bottom_zr_ = Tensor(h, 2 * h, device);
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

  void forward(SnapshotSequence& seq, int64_t t, Matrix<const float> x, Matrix<float> y, bool record) override {
    HALOGEN_ASSERT(x.rows == n_ && x.cols == config_.in && y.rows == n_ && y.cols == config_.out);
    HALOGEN_ASSERT(!record || recorded_ < config_.max_window, "more recorded steps than max_window %lld",
                   (long long)config_.max_window);
    const int64_t slot = record ? recorded_ : config_.max_window;
    Matrix<float> ax = slot_rows(ax_, slot), h_prev = slot_rows(h_prev_, slot), gates = slot_rows(gates_, slot);
    if (record && recorded_ < static_cast<int64_t>(prefetched_.size())) {
      HALOGEN_ASSERT(prefetched_[recorded_] == t, "step %lld was not the prefetched one", (long long)t);
    } else {
      seq.aggregate(t, x, ax);
    }
    kernels::scale_add(1.0f, state_.matrix(), 0.0f, h_prev, stream_);
    fold_parameters();
    Matrix<float> pre = pre_.matrix();
    const int64_t h = h_;
    gemm(ax, folded_.matrix(), pre, 0.0f);
    add_row(pre, folded_bias_.matrix());
    gemm(h_prev, bottom_zr_.matrix(), columns(pre, 0, 2 * h), 1.0f);
    // Z | R = sigmoid, H o R.
    kernels::gru_gates(columns(pre, 0, h), columns(pre, h, h), h_prev, columns(gates, 0, h), columns(gates, h, h),
                       columns(gates, 3 * h, h), stream_);
    gemm(columns(gates, 3 * h, h), lin_bottom(2), columns(pre, 2 * h, h), 1.0f);
    // H~ = tanh, H_t = Z o H + (1 - Z) o H~.
    Matrix<float> state = state_.matrix();
    kernels::gru_update(columns(pre, 2 * h, h), columns(gates, 0, h), h_prev, kernels::GruMix::z_keeps_state,
                        columns(gates, 2 * h, h), state, stream_);
    head_.forward(state, y, record ? slot : -1);
    if (record) ++recorded_;
  }

  void prefetch(SnapshotSequence& seq, const std::vector<int64_t>& snapshots,
                const std::vector<Matrix<const float>>& x) override {
    HALOGEN_ASSERT(recorded_ == 0 && static_cast<int64_t>(snapshots.size()) <= config_.max_window);
    std::vector<Matrix<float>> out;
    for (size_t i = 0; i < snapshots.size(); ++i) out.push_back(slot_rows(ax_, static_cast<int64_t>(i)));
    seq.aggregate_many(snapshots, x, out);
    prefetched_ = snapshots;
  }

  void backward(SnapshotSequence& seq, int64_t t, Matrix<const float> grad_y) override {
    (void)seq;  // x_t is not trainable: no gradient flows back through Â_t
    (void)t;
    HALOGEN_ASSERT(recorded_ > 0, "backward without a recorded step");
    const int64_t slot = --recorded_;
    Matrix<const float> ax = slot_rows(ax_, slot), h_prev = slot_rows(h_prev_, slot), gates = slot_rows(gates_, slot);
    Matrix<float> grad_h = grad_head_.matrix(), grad_state = grad_state_.matrix(), grad_pre = grad_pre_.matrix(),
                  grad_hr = grad_hr_.matrix();
    head_.backward(slot, grad_y, grad_h);
    const int64_t h = h_;
    // dH_t = head + carried; dZ_pre, dH~_pre; dH_prev (direct term) replaces the carry.
    kernels::gru_update_backward(grad_h, grad_state, columns(gates, 0, h), h_prev, columns(gates, 2 * h, h),
                                 kernels::GruMix::z_keeps_state, columns(grad_pre, 0, h), columns(grad_pre, 2 * h, h),
                                 grad_state, stream_);
    // Candidate: pre_h += (H o R) L_h2.
    Matrix<const float> grad_pre_h = columns(grad_pre, 2 * h, h);
    gemm(grad_pre_h, lin_bottom(2), grad_hr, 0.0f, false, true);
    gemm_grad(columns(gates, 3 * h, h), grad_pre_h, lin_bottom_grad(2));
    // H o R: dR_pre, and dH_prev += dHR o R.
    kernels::gru_gates_backward(grad_hr, columns(gates, h, h), h_prev, columns(grad_pre, h, h), grad_state, stream_);
    // pre_zr += H [L_z2 | L_r2]: to the state and to the two bottoms.
    Matrix<const float> grad_pre_zr = columns(grad_pre, 0, 2 * h);
    gemm(grad_pre_zr, bottom_zr_.matrix(), grad_state, 1.0f, false, true);
    kernels::fill(grad_bottom_zr_.span(), 0.0f, stream_);
    gemm_grad(h_prev, grad_pre_zr, grad_bottom_zr_.matrix());
    // pre = AX M + e.
    kernels::fill(grad_folded_.span(), 0.0f, stream_);
    kernels::fill(grad_folded_bias_.span(), 0.0f, stream_);
    gemm_grad(ax, grad_pre, grad_folded_.matrix());
    bias_grad(grad_pre, grad_folded_bias_.matrix());
    unfold_gradients();
  }

  int64_t scratch_bytes() const override {
    const int64_t slots = config_.max_window + 1;
    return static_cast<int64_t>(sizeof(float)) *
               (slots * n_ * (config_.in + h_ + 4 * h_) + n_ * (h_ * 4 + 3 * h_ * 2)) +
           head_.scratch_bytes();
  }

 private:
  static constexpr int kConvWeight = 0, kConvBias = 1;
  static constexpr int kLin[3] = {2, 4, 6};
  static constexpr int kLinBias[3] = {3, 5, 7};

  ParameterStore& init_store() {
    const int64_t in = config_.in, h = config_.hidden;
    HALOGEN_ASSERT(store_.add("tgcn.conv_weight", 0, in, 3 * h, false) == kConvWeight);  // [W_z | W_r | W_h]
    HALOGEN_ASSERT(store_.add("tgcn.conv_bias", 0, 1, 3 * h, true) == kConvBias);
    const char* names[3] = {"z", "r", "h"};
    for (int g = 0; g < 3; ++g) {
      HALOGEN_ASSERT(store_.add(std::string("tgcn.linear_") + names[g] + ".weight", 0, 2 * h, h, false) == kLin[g]);
      HALOGEN_ASSERT(store_.add(std::string("tgcn.linear_") + names[g] + ".bias", 0, 1, h, true) == kLinBias[g]);
    }
    return store_;
  }

  // M_g = W_g L_g1, e_g = b_g L_g1 + c_g, [L_z2 | L_r2] (small, once per step).
  void fold_parameters() {
    const int64_t h = h_;
    Matrix<float> w = store_.param(kConvWeight), b = store_.param(kConvBias);
    Matrix<float> folded = folded_.matrix(), folded_bias = folded_bias_.matrix(), bottom = bottom_zr_.matrix();
    for (int g = 0; g < 3; ++g) {
      kernels::gemm(columns(w, g * h, h), false, lin_top(g), false, columns(folded, g * h, h), 1.0f, 0.0f, stream_);
      Matrix<float> e = columns(folded_bias, g * h, h);
      kernels::gemm(columns(b, g * h, h), false, lin_top(g), false, e, 1.0f, 0.0f, stream_);
      kernels::scale_add(1.0f, store_.param(kLinBias[g]), 1.0f, e, stream_);
    }
    for (int g = 0; g < 2; ++g) kernels::scale_add(1.0f, lin_bottom(g), 0.0f, columns(bottom, g * h, h), stream_);
  }

  // dW_g += dM_g L_g1^T, dL_g1 += W_g^T dM_g + b_g^T de_g, db_g += de_g L_g1^T, dc_g += de_g, d[L_z2|L_r2].
  void unfold_gradients() {
    const int64_t h = h_;
    Matrix<float> w = store_.param(kConvWeight), b = store_.param(kConvBias);
    Matrix<float> gw = store_.grad(kConvWeight), gb = store_.grad(kConvBias);
    Matrix<float> dm = grad_folded_.matrix(), de = grad_folded_bias_.matrix(), dbottom = grad_bottom_zr_.matrix();
    for (int g = 0; g < 3; ++g) {
      Matrix<float> dm_g = columns(dm, g * h, h), de_g = columns(de, g * h, h);
      kernels::gemm(dm_g, false, lin_top(g), true, columns(gw, g * h, h), 1.0f, 1.0f, stream_);
      kernels::gemm(columns(w, g * h, h), true, dm_g, false, lin_top_grad(g), 1.0f, 1.0f, stream_);
      kernels::gemm(columns(b, g * h, h), true, de_g, false, lin_top_grad(g), 1.0f, 1.0f, stream_);
      kernels::gemm(de_g, false, lin_top(g), true, columns(gb, g * h, h), 1.0f, 1.0f, stream_);
      kernels::scale_add(1.0f, de_g, 1.0f, store_.grad(kLinBias[g]), stream_);
    }
    for (int g = 0; g < 2; ++g)
      kernels::scale_add(1.0f, columns(dbottom, g * h, h), 1.0f, lin_bottom_grad(g), stream_);
  }

  Matrix<float> slot_rows(Tensor& t, int64_t slot) { return t.matrix().slice_rows(slot * n_, (slot + 1) * n_); }
  static Matrix<float> columns(Matrix<float> m, int64_t begin, int64_t count) {
    return Matrix<float>{m.data + begin, m.rows, count, m.stride, m.device};
  }
  static Matrix<const float> columns(Matrix<const float> m, int64_t begin, int64_t count) {
    return Matrix<const float>{m.data + begin, m.rows, count, m.stride, m.device};
  }
  Matrix<float> lin_top(int g) { return store_.param(kLin[g]).slice_rows(0, h_); }
  Matrix<float> lin_bottom(int g) { return store_.param(kLin[g]).slice_rows(h_, 2 * h_); }
  Matrix<float> lin_top_grad(int g) { return store_.grad(kLin[g]).slice_rows(0, h_); }
  Matrix<float> lin_bottom_grad(int g) { return store_.grad(kLin[g]).slice_rows(h_, 2 * h_); }

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
  void add_row(Matrix<float> m, Matrix<const float> bias) {
    if (m.rows > 0) kernels::add_bias(m, Span<const float>{bias.data, bias.cols, bias.device}, stream_);
  }
  void bias_grad(Matrix<const float> g, Matrix<float> grad_bias) {
    if (g.rows > 0) kernels::bias_backward(g, Span<float>{grad_bias.data, grad_bias.cols, grad_bias.device}, stream_);
  }

  TemporalModelConfig config_;
  int64_t n_, h_;
  kernels::Stream stream_;
  ParameterStore store_;
  ReluLinearHead head_;
  Tensor ax_, h_prev_, gates_;  // per slot
  Tensor state_, pre_, grad_state_, grad_head_, grad_pre_, grad_hr_;
  Tensor folded_, folded_bias_, bottom_zr_, grad_folded_, grad_folded_bias_, grad_bottom_zr_;
  int64_t recorded_ = 0;
  std::vector<int64_t> prefetched_;  // snapshots whose Â_t x_t are already in slots 0..
};

}  // namespace

std::unique_ptr<TemporalModel> make_tgcn(const TemporalModelConfig& config, int64_t num_owned) {
  return std::make_unique<Tgcn>(config, num_owned);
}

TemporalSpec tgcn_spec() {
  // Overfits beyond ~60 epochs (test MSE 1.19-1.31 at 100-200).
  const TemporalTrainingDefaults defaults{50, 0, 1.0f, 0.01f};
  auto memory = [](const TemporalModelConfig&, int64_t width, int64_t) {
    // Caches in + 5h per step (scratch_bytes); three gates on [x, h] (GCN weight and bias each).
    return TemporalCellMemory{6, 3 * (2 * width + 1) * width, 0};
  };
  return {"tgcn", TemporalKind::tgcn, "T-GCN (Zhao et al.)", graph::Normalization::gcn, /*stacks_layers=*/false,
          defaults, make_tgcn, memory, [](const TemporalModelConfig&) { return std::string(); }};
}

}  // namespace halogen::nn
