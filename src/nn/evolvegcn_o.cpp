#include "nn/evolvegcn_o.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/format.h"
#include "kernels/ops.h"
#include "nn/evolve_gcn.h"
#include "nn/relu_linear_head.h"
#include "nn/temporal_registry.h"

namespace halogen::nn {
namespace {

// EvolveGCN-O (Pareja et al. 2020, the authors' egcn_o.py): L layers of widths in -> hidden -> ... -> hidden.
// Layer l has a weight W^l whose initial value W_0^l is a parameter; every time step advances it by the matrix
// GRU of nn/evolve_gcn.h (W_t = GRU(W_{t-1}), its own nine tensors per layer), and step t uses W_t:
//   H_t^l = relu(Â_t H_t^{l-1} W_t^l),  H_t^0 = x_t,  y_t = head(H_t^L).
// The hidden state is the current W^l of every layer (replicated on every rank, no exchange of state). The
// product order per layer aggregates the narrower side: (Â H) W when hidden >= d_in, Â (H W) when hidden < d_in.
//
// Per layer and recorded slot k (caches sized by max_window; slot max_window serves unrecorded steps):
//   previous[k] = the GRU input Q, gates[k] = Z | R | H~, weights[k] = W used by the step,
//   input[k]    = Â H^{l-1} (aggregate first) or H^{l-1} (transform first, first layer only: a copy of x),
//   product[k]  = H^{l-1} W (transform first only), output[k] = H^l (after relu).
// Backward of a step (layers in reverse): G = dH^l o [H^l > 0]; dW_t += input^T G (or H^{l-1}^T Â^T G);
// dH^{l-1} for l > 0; then one GRU step backward turns dLoss/dW_t (its own product + the carry from later
// steps) into the carry dLoss/dW_{t-1}. At the window's first step the carry goes into dW_0 only when the
// window started from W_0 (the first window after reset_state()); otherwise it is dropped (truncation).
class EvolveGcnO final : public TemporalModel {
 public:
  EvolveGcnO(const TemporalModelConfig& config, int64_t num_owned)
      : config_(config),
        n_(num_owned),
        h_(config.hidden),
        slots_(config.max_window + 1),
        stream_(config.stream),
        head_(register_layers(), config.layers, config.hidden, config.out) {
    const Device device = config.device;
    store_.allocate(device);
    store_.initialize(config.seed);
    head_.allocate(n_, config.max_window, device, stream_);
    for (int l = 0; l < config.layers; ++l) {
      Layer& layer = layers_[l];
      const int64_t d = layer.d_in, square = d * h_;
      layer.step = std::make_unique<MatrixGruStep>(d, h_, device, stream_);
      layer.current = Tensor(d, h_, device);
      layer.previous = Tensor(slots_ * d, h_, device);
      layer.weights = Tensor(slots_ * d, h_, device);
      layer.gates = Tensor(slots_ * 3 * d, h_, device);
      if (!layer.transform_first || l == 0) layer.input = Tensor(slots_ * n_, d, device);
      if (layer.transform_first) layer.product = Tensor(slots_ * n_, h_, device);
      layer.output = Tensor(slots_ * n_, h_, device);
      layer.carry = Tensor(d, h_, device);
      layer.carry_next = Tensor(d, h_, device);
      scratch_bytes_ += static_cast<int64_t>(sizeof(float)) *
                            (3 * square + slots_ * 5 * square + layer.input.size() + layer.product.size() +
                             layer.output.size()) +
                        layer.step->workspace_bytes();
    }
    recorded_steps_.assign(config.max_window, -1);
    aggregate_in_.reserve(config.max_window);
    aggregate_out_.reserve(config.max_window);
    grad_h_ = Tensor(n_, h_, device);
    grad_scratch_ = Tensor(n_, h_, device);
    scratch_bytes_ += 2 * n_ * h_ * static_cast<int64_t>(sizeof(float)) + head_.scratch_bytes();
    reset_state();
  }

  ParameterStore& store() override { return store_; }
  const TemporalModelConfig& config() const override { return config_; }
  int64_t scratch_bytes() const override { return scratch_bytes_; }

  void reset_state() override {
    at_w0_ = true;
    begin_window();
  }

  void begin_window() override {
    recorded_ = 0;
    prefetched_ = 0;
    window_from_w0_ = at_w0_;
    for (Layer& layer : layers_) {
      kernels::fill(layer.carry.span(), 0.0f, stream_);
      kernels::fill(layer.carry_next.span(), 0.0f, stream_);
    }
  }

  void forward(SnapshotSequence& seq, int64_t t, Matrix<const float> x, Matrix<float> y, bool record) override {
    HALOGEN_ASSERT(x.rows == n_ && x.cols == config_.in && y.rows == n_ && y.cols == config_.out);
    HALOGEN_ASSERT(!record || recorded_ < config_.max_window, "more recorded steps than max_window %lld",
                   (long long)config_.max_window);
    const int64_t slot = record ? recorded_ : config_.max_window;
    if (record && recorded_ < prefetched_) {
      HALOGEN_ASSERT(recorded_steps_[recorded_] == t, "step %lld was not the prefetched one", (long long)t);
    } else {
      HALOGEN_ASSERT(recorded_ >= prefetched_, "an unrecorded step inside a prefetched window");
      advance_weights(slot, record);
      one_step_[0] = t;
      one_input_[0] = x;
      run_layers(seq, one_step_, one_input_, slot, record);
      if (record) recorded_steps_[slot] = t;
    }
    head_.forward(slot_rows(layers_.back().output, slot), y, record ? slot : -1);
    if (record) ++recorded_;
  }

  // The whole window's layers in one pass per layer: the K weights first (they do not depend on the graph),
  // then per layer one SnapshotSequence::aggregate_many over the K snapshots (the exchange of step k+1 in
  // flight while step k's product runs). forward() then only applies the head.
  void prefetch(SnapshotSequence& seq, const std::vector<int64_t>& snapshots,
                const std::vector<Matrix<const float>>& x) override {
    const int64_t m = static_cast<int64_t>(snapshots.size());
    HALOGEN_ASSERT(recorded_ == 0 && prefetched_ == 0 && m <= config_.max_window && x.size() == snapshots.size());
    if (m == 0) return;
    for (int64_t k = 0; k < m; ++k) {
      HALOGEN_ASSERT(x[k].rows == n_ && x[k].cols == config_.in);
      advance_weights(k, true);
    }
    run_layers(seq, snapshots, x, 0, true);
    std::copy(snapshots.begin(), snapshots.end(), recorded_steps_.begin());
    prefetched_ = m;
  }

  void backward(SnapshotSequence& seq, int64_t t, Matrix<const float> grad_y) override {
    HALOGEN_ASSERT(recorded_ > 0, "backward without a recorded step");
    const int64_t slot = --recorded_;
    HALOGEN_ASSERT(recorded_steps_[slot] == t, "backward of step %lld, but the last recorded step is %lld",
                   (long long)t, (long long)recorded_steps_[slot]);
    Matrix<float> grad_h = grad_h_.matrix(), scratch = grad_scratch_.matrix();
    head_.backward(slot, grad_y, grad_h);
    for (int l = config_.layers - 1; l >= 0; --l) {
      Layer& layer = layers_[l];
      const Matrix<const float> output = slot_rows(layer.output, slot);
      const Matrix<const float> w = slot_rows(layer.weights, slot, layer.d_in);
      Matrix<float> carry = layer.carry.matrix();
      relu_backward(output, grad_h);  // grad_h = G = dLoss/d(pre-activation)
      if (layer.transform_first) {
        // H^l = relu(Â (H^{l-1} W)): dW += H^{l-1}^T Â^T G, dH^{l-1} = (Â^T G) W^T.
        seq.aggregate_transpose(t, grad_h, scratch);
        gemm(layer_input(l, slot), true, scratch, false, carry, 1.0f);
        if (l > 0) gemm(scratch, false, w, true, grad_h, 0.0f);
      } else {
        // H^l = relu((Â H^{l-1}) W): dW += (Â H^{l-1})^T G, dH^{l-1} = Â^T (G W^T).
        gemm(slot_rows(layer.input, slot), true, grad_h, false, carry, 1.0f);
        if (l > 0) {
          gemm(grad_h, false, w, true, scratch, 0.0f);
          seq.aggregate_transpose(t, scratch, grad_h);
        }
      }
      // carry = dLoss/dW_t (this step's products + later steps); one GRU step back gives dLoss/dW_{t-1}.
      layer.step->backward(gru_params(l), slot_rows(layer.previous, slot, layer.d_in), gates(l, slot), carry,
                           gru_grads(l), layer.carry_next.matrix());
      std::swap(layer.carry, layer.carry_next);
      if (slot == 0) {
        if (window_from_w0_) kernels::scale_add(1.0f, layer.carry.matrix(), 1.0f, store_.grad(layer.w0), stream_);
        kernels::fill(layer.carry.span(), 0.0f, stream_);  // truncation: nothing flows into the steps before the window
      }
    }
  }

 private:
  struct Layer {
    int64_t d_in = 0;
    bool transform_first = false;  // hidden < d_in: Â (H W); otherwise (Â H) W
    int w0 = -1, gru = -1;         // store indices: W_0, and the first of the nine GRU tensors
    std::unique_ptr<MatrixGruStep> step;
    Tensor current;                      // (d_in, h): the state, W of the last step (unused while at_w0_)
    Tensor previous, weights, gates;     // per slot: GRU input Q, W used, Z | R | H~ (each (d_in, h))
    Tensor input, product, output;       // per slot, (n, .): see the class comment
    Tensor carry, carry_next;            // (d_in, h): dLoss/dW of the step being undone, and of the one before
  };

  ParameterStore& register_layers() {
    HALOGEN_ASSERT(config_.layers >= 1, "EvolveGCN-O needs at least one layer");
    static const char* gru_names[9] = {"w_z", "u_z", "b_z", "w_r", "u_r", "b_r", "w_h", "u_h", "b_h"};
    layers_.resize(static_cast<size_t>(config_.layers));
    for (int l = 0; l < config_.layers; ++l) {
      Layer& layer = layers_[l];
      layer.d_in = l == 0 ? config_.in : config_.hidden;
      layer.transform_first = config_.hidden < layer.d_in;
      const std::string prefix = "egcn.layer" + std::to_string(l) + ".";
      layer.w0 = store_.add(prefix + "weight", l, layer.d_in, h_, false);
      for (int k = 0; k < 9; ++k) {
        const bool bias = k % 3 == 2;
        const int index = store_.add(prefix + "gru." + gru_names[k], l, layer.d_in, bias ? h_ : layer.d_in, bias);
        if (k == 0) layer.gru = index;
      }
    }
    return store_;
  }

  nn::MatrixGruParams gru_params(int l) {
    const int g = layers_[l].gru;
    return {store_.param(g), store_.param(g + 1), store_.param(g + 2), store_.param(g + 3), store_.param(g + 4),
            store_.param(g + 5), store_.param(g + 6), store_.param(g + 7), store_.param(g + 8)};
  }
  nn::MatrixGruGrads gru_grads(int l) {
    const int g = layers_[l].gru;
    return {store_.grad(g), store_.grad(g + 1), store_.grad(g + 2), store_.grad(g + 3), store_.grad(g + 4),
            store_.grad(g + 5), store_.grad(g + 6), store_.grad(g + 7), store_.grad(g + 8)};
  }
  nn::MatrixGruGates gates(int l, int64_t slot) {
    Layer& layer = layers_[l];
    const int64_t d = layer.d_in, base = slot * 3 * d;
    Matrix<float> all = layer.gates.matrix();
    return {all.slice_rows(base, base + d), all.slice_rows(base + d, base + 2 * d),
            all.slice_rows(base + 2 * d, base + 3 * d)};
  }

  // W_t = GRU(W_{t-1}) for every layer into `slot`; the state moves on to W_t.
  void advance_weights(int64_t slot, bool record) {
    for (int l = 0; l < config_.layers; ++l) {
      Layer& layer = layers_[l];
      const int64_t d = layer.d_in;
      Matrix<float> previous = slot_rows(layer.previous, slot, d), next = slot_rows(layer.weights, slot, d);
      if (record && slot == 0) window_from_w0_ = at_w0_;
      const Matrix<const float> q = at_w0_ ? store_.param(layer.w0) : layer.current.matrix();
      // Backward needs Q; unrecorded steps only need it as the GRU input (read in place).
      if (record) kernels::scale_add(1.0f, q, 0.0f, previous, stream_);
      layer.step->forward(gru_params(l), record ? Matrix<const float>(previous) : q, gates(l, slot), next);
      kernels::scale_add(1.0f, next, 0.0f, layer.current.matrix(), stream_);
    }
    at_w0_ = false;
  }

  // The layers of steps t[k] (slots first_slot + k) with the weights already in those slots: per layer one
  // aggregate over all the steps (aggregate_many), the dense products per step around it.
  void run_layers(SnapshotSequence& seq, const std::vector<int64_t>& t, const std::vector<Matrix<const float>>& x,
                  int64_t first_slot, bool record) {
    const int64_t m = static_cast<int64_t>(t.size());
    std::vector<Matrix<const float>>& agg_in = aggregate_in_;
    std::vector<Matrix<float>>& agg_out = aggregate_out_;
    agg_in.resize(m);  // capacity max_window: no allocation
    agg_out.resize(m);
    for (int l = 0; l < config_.layers; ++l) {
      Layer& layer = layers_[l];
      for (int64_t k = 0; k < m; ++k) {
        const int64_t slot = first_slot + k;
        const Matrix<const float> in = l == 0 ? x[k] : Matrix<const float>(slot_rows(layers_[l - 1].output, slot));
        const Matrix<const float> w = slot_rows(layer.weights, slot, layer.d_in);
        if (layer.transform_first) {
          if (l == 0 && record) copy_rows(in, slot_rows(layer.input, slot));  // x for dW in backward
          gemm(in, false, w, false, slot_rows(layer.product, slot), 0.0f);
          agg_in[k] = slot_rows(layer.product, slot);
          agg_out[k] = slot_rows(layer.output, slot);
        } else {
          agg_in[k] = in;
          agg_out[k] = slot_rows(layer.input, slot);
        }
      }
      seq.aggregate_many(t, agg_in, agg_out);
      for (int64_t k = 0; k < m; ++k) {
        const int64_t slot = first_slot + k;
        Matrix<float> output = slot_rows(layer.output, slot);
        if (!layer.transform_first)
          gemm(slot_rows(layer.input, slot), false, slot_rows(layer.weights, slot, layer.d_in), false, output, 0.0f);
        relu(output);
      }
    }
  }

  // H^{l-1} of a transform-first layer: the copy of x (first layer) or the previous layer's output.
  Matrix<const float> layer_input(int l, int64_t slot) {
    return l == 0 ? slot_rows(layers_[0].input, slot) : slot_rows(layers_[l - 1].output, slot);
  }

  // Rows [slot * rows, (slot + 1) * rows) of a per-slot tensor.
  Matrix<float> slot_rows(Tensor& tensor, int64_t slot, int64_t rows) {
    return tensor.matrix().slice_rows(slot * rows, (slot + 1) * rows);
  }
  Matrix<float> slot_rows(Tensor& tensor, int64_t slot) { return slot_rows(tensor, slot, n_); }

  // c = op(a) op(b) + beta c (kernels::gemm handles empty row counts: a rank may own no vertex).
  void gemm(Matrix<const float> a, bool ta, Matrix<const float> b, bool tb, Matrix<float> c, float beta) {
    kernels::gemm(a, ta, b, tb, c, 1.0f, beta, stream_);
  }
  void copy_rows(Matrix<const float> from, Matrix<float> to) { kernels::scale_add(1.0f, from, 0.0f, to, stream_); }
  void relu(Matrix<float> m) { kernels::relu_forward(m, m, stream_); }
  // grad = 0 where the relu output was 0 (its input was <= 0).
  void relu_backward(Matrix<const float> output, Matrix<float> grad) { kernels::relu_backward(output, grad, stream_); }

  TemporalModelConfig config_;
  int64_t n_, h_, slots_;
  kernels::Stream stream_;
  ParameterStore store_;
  std::vector<Layer> layers_;
  ReluLinearHead head_;
  Tensor grad_h_, grad_scratch_;  // (n, h)
  int64_t scratch_bytes_ = 0;
  bool at_w0_ = true;            // the state is W_0 (nothing run since reset_state())
  bool window_from_w0_ = true;   // the current window's first step started from W_0
  int64_t recorded_ = 0;         // recorded steps not yet backpropagated
  int64_t prefetched_ = 0;       // steps of this window computed by prefetch()
  std::vector<int64_t> recorded_steps_;  // [max_window] the snapshot of each recorded slot
  // Argument vectors of run_layers, kept so that forward() allocates nothing.
  std::vector<int64_t> one_step_ = {0};
  std::vector<Matrix<const float>> one_input_ = {Matrix<const float>{}};
  std::vector<Matrix<const float>> aggregate_in_;
  std::vector<Matrix<float>> aggregate_out_;
};

}  // namespace

std::unique_ptr<TemporalModel> make_evolvegcn_o(const TemporalModelConfig& config, int64_t num_owned) {
  HALOGEN_ASSERT(config.in >= 1 && config.hidden >= 1 && config.out >= 1 && config.max_window >= 1);
  if (config.layers < 1) throw UserError("EvolveGCN-O needs --layers >= 1 (got " + std::to_string(config.layers) + ")");
  return std::make_unique<EvolveGcnO>(config, num_owned);
}

TemporalSpec evolvegcn_o_spec() {
  // Several updates per epoch under --task regression (one window per epoch stays at the mean's level).
  const TemporalTrainingDefaults defaults{50, 15, 1.0f, 0.01f};
  auto memory = [](const TemporalModelConfig& config, int64_t width, int64_t slots) {
    // Caches: input, product and output of each layer per step. Each layer's evolving weight is a GRU over a
    // (width, width) matrix: its 5 squares per slot; parameters: the initial weight and the GRU's three gates.
    const int64_t layers = std::max(1, config.layers);
    constexpr int64_t kFloat = sizeof(float);
    return TemporalCellMemory{3 * layers, layers * 7 * (width + 1) * width,
                              layers * (5 * slots + 3) * width * width * kFloat};
  };
  return {"evolvegcn-o", TemporalKind::evolvegcn_o, "EvolveGCN-O (Pareja et al.)", graph::Normalization::gcn,
          /*stacks_layers=*/true, defaults, make_evolvegcn_o, memory,
          [](const TemporalModelConfig& config) { return strformat(", %d layers", config.layers); }};
}

}  // namespace halogen::nn
