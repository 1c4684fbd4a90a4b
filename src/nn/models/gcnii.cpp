// GCNII (Chen et al., ICML 2020, "Simple and Deep Graph Convolutional Networks"): deep GCN with an initial
// residual and an identity mapping, as the authors' reference code (github.com/chennnM/GCNII, model GCNII,
// variant=False). With L = --layers convolutions of width H = --hidden:
//
//   X_0 = dropout(X)                                                  dropout stream (epoch, 0)
//   h_0 = relu(X_0 W_in + b_in)                                       (n, H), the initial residual
//   d_l = dropout(h_{l-1})                     l = 1 .. L + 1         dropout stream (epoch, l)
//   s_l = (1 - alpha) Â d_l + alpha h_0        l = 1 .. L             (one halo exchange of d_l, width H)
//   h_l = relu(theta_l s_l W_l + (1 - theta_l) s_l),  theta_l = log(lambda / l + 1)   (no bias)
//   logits = d_{L+1} W_out + b_out
// Â = D^-1/2 (A + I) D^-1/2 (GCN's, nn::DistributedAdjacency: the exchange overlapped with the owned
// product).
//
// Backward (G_l = dLoss/d(theta_l s_l W_l + (1 - theta_l) s_l), g_l = dLoss/dd_l):
//   g_{L+1} = dLoss/dlogits W_out^T
//   G_l = g_{l+1} o relu'(.) o dropout mask, read off d_{l+1} (kernels::relu_dropout_backward: d_{l+1} > 0
//         exactly where the unit was kept and positive)
//   dW_l = theta_l s_l^T G_l;   ds_l = theta_l G_l W_l^T + (1 - theta_l) G_l
//   dLoss/dh_0 += alpha ds_l;   g_l = (1 - alpha) Â^T ds_l     (the reverse exchange)
//   dLoss/dZ_0 = (dLoss/dh_0 + g_1 o mask_1) o relu'(Z_0)
//
// Memory (every buffer allocated at construction; nothing in the training loop). The conv layers' inputs
// d_1 .. d_{L+1} live in ONE buffer D of L n + max(n, h) rows (n owned, h halo rows): d_l is rows
// [(l-1) n, l n), and layer l's exchange lands the halo rows of d_l right after them, in rows [l n, l n + h),
// over d_{l+1} .. which are written only after layer l's product has read them. So the halo rows cost
// h H floats once, not per layer, and a layer keeps 2 n H floats (d_l and s_l, both read by the backward):
// 8 H bytes per owned row per layer. Besides: the features and X_0 (n F each), h_0, the backward's three
// (n, H) buffers (g in turn, dLoss/dh_0; ds_l is written over s_l, which the backward has read by then), the
// logits and their gradient (n, C), the adjacency and its exchange buffers (width H).
//
// Initialisation as the reference (PyTorch's defaults): W_in, b_in, W_out, b_out uniform in +-1/sqrt(fan_in)
// (nn.Linear), W_l uniform in +-1/sqrt(H); element e of tensor k from rng::uniform(seed,
// stream_id(kWeightInit, k), e), so every rank holds the same weights. Dropout is keyed by (seed, epoch, l,
// global vertex id, column), so P ranks compute what one rank computes, up to summation order.
//
// Options (ModelConfig::values): --alpha, --lambda, --conv-weight-decay (the reference's wd1 on the
// convolutions; --weight-decay, its wd2, on the two dense layers). Parameter layers: 0 = the input layer,
// l = convolution l, L + 1 = the output layer; layer_output(l) is h_0, h_1 .. h_L and the logits.
#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/format.h"
#include "core/rng.h"
#include "graph/local_graph.h"
#include "kernels/ops.h"
#include "nn/compute_stream.h"
#include "nn/distributed_adjacency.h"
#include "nn/model_registry.h"
#include "nn/node_labels.h"

namespace halogen::nn {
namespace {

constexpr float kDefaultAlpha = 0.1f, kDefaultLambda = 0.5f, kDefaultConvWeightDecay = 0.01f;

float real_value(const ModelConfig& config, const char* name, float fallback) {
  const auto it = config.values.find(name);
  return it == config.values.end() ? fallback : std::get<float>(it->second);
}
float alpha_of(const ModelConfig& c) {
  return real_value(c, "alpha", kDefaultAlpha);
}
float lambda_of(const ModelConfig& c) {
  return real_value(c, "lambda", kDefaultLambda);
}
float conv_weight_decay_of(const ModelConfig& c) {
  return real_value(c, "conv-weight-decay", kDefaultConvWeightDecay);
}

// theta_l = log(lambda / l + 1), l = 1 .. L.
float theta_of(const ModelConfig& c, int l) {
  return static_cast<float>(std::log(static_cast<double>(lambda_of(c)) / l + 1.0));
}

// Rows of the buffer of d_1 .. d_{L+1} with layer L's halo rows (see the file comment).
int64_t input_rows(int layers, int64_t num_owned, int64_t num_halo) {
  return layers * num_owned + std::max(num_owned, num_halo);
}

void check_config(const ModelConfig& c) {
  HALOGEN_USER_CHECK(c.layers >= 1, "--layers must be at least 1 (got %d)", c.layers);
  HALOGEN_USER_CHECK(c.hidden >= 1, "--hidden must be at least 1");
  HALOGEN_USER_CHECK(c.dropout >= 0.0f && c.dropout < 1.0f, "--dropout must be in [0, 1) (got %g)",
                     c.dropout);
  HALOGEN_USER_CHECK(!c.edge_weight, "--edge-weight is not supported by --model gcnii");
}

class Gcnii final : public NodeModel {
 public:
  Gcnii(const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard, graph::Shard* release,
        Device device);

  double train_step_local(int64_t epoch, float loss_scale, GradientReducer* reducer) override;
  std::array<int64_t, 3> evaluate_local() override {
    infer();
    return labels_.count_correct(logits(), stream_.get());
  }
  double evaluated_loss_local(int split) override {
    return labels_.loss(logits(), split, 0.0f, grad_logits_.matrix(), stream_.get());  // scratch, as Model's
  }
  void infer() override { forward(0, false); }
  Matrix<const float> logits() const override { return logits_.matrix(); }
  int num_layers() const override { return config_.layers + 2; }
  Matrix<const float> layer_output(int l) const override {
    HALOGEN_ASSERT(l >= 0 && l < num_layers(), "layer %d", l);
    if (l == 0) return h0_.matrix();
    if (l == config_.layers + 1) return logits();
    return input(l + 1);  // d_{l+1} = h_l after a forward with dropout off
  }
  int first_nonfinite_layer_local(int64_t epoch) override;
  std::array<int64_t, 3> split_sizes_local() const override { return labels_.split_sizes; }
  int64_t sparse_input_nonzeros() const override { return 0; }
  bool own_symmetric() const override { return adjacency_->own_symmetric(); }
  int64_t halo_bytes_sent() const override { return adjacency_->exchange().stats().bytes_sent; }
  ParameterStore& parameters() override { return store_; }
  PhaseClock& clock() override { return *clock_; }
  kernels::Stream stream() const override { return stream_.get(); }
  Device device() const override { return device_; }
  const ModelConfig& config() const override { return config_; }
  void set_overlap(bool overlap) override {
    config_.overlap = overlap;
    adjacency_->set_overlap(overlap);
  }

 private:
  void initialize_parameters();
  void forward(int64_t epoch, bool training);
  // d_l (n, H), l = 1 .. L + 1; with_halo: (n + h, H), the input of convolution l (l <= L).
  Matrix<float> input(int l, bool with_halo = false) const {
    const int64_t n = num_owned_;
    float* data = const_cast<float*>(inputs_.data()) + (l - 1) * n * hidden_;
    return Matrix<float>{data, with_halo ? n + num_halo_ : n, hidden_, hidden_, device_};
  }
  Matrix<float> mix(int l) { return mixes_.matrix().slice_rows((l - 1) * num_owned_, l * num_owned_); }
  uint64_t dropout_stream(int64_t epoch, int l) const {
    return rng::stream_id(rng::kDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(l));
  }

  ModelConfig config_;
  Device device_;
  ComputeStream stream_;
  std::unique_ptr<PhaseClock> clock_;
  int64_t num_owned_ = 0, num_halo_ = 0, hidden_ = 0, num_features_ = 0, num_classes_ = 0;
  float alpha_ = 0.0f;
  std::vector<float> theta_;  // theta_[l], l = 1 .. L (theta_[0] unused)
  ParameterStore store_;
  int w_in_ = -1, b_in_ = -1, w_out_ = -1, b_out_ = -1;
  std::vector<int> w_conv_;  // w_conv_[l - 1]: W_l
  std::unique_ptr<DistributedAdjacency> adjacency_;
  NodeLabels labels_;
  Tensor features_, dropped_features_;  // (n, F): X and X_0
  Tensor h0_;                           // (n, H)
  Tensor inputs_;                       // d_1 .. d_{L+1} and the halo rows (input_rows, H)
  Tensor mixes_;                        // s_1 .. s_L (L n, H); the backward writes ds_l over s_l
  Tensor logits_, grad_logits_;         // (n, C)
  std::array<Tensor, 2> grad_inputs_;   // g_l in turn (n, H)
  Tensor grad_h0_;                      // (n, H)
};

Gcnii::Gcnii(const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard,
             graph::Shard* release, Device device)
    : config_(config),
      device_(device),
      stream_(device),
      clock_(make_phase_clock(device)),
      num_owned_(shard.num_owned()),
      num_halo_(shard.num_halo()),
      hidden_(config.hidden),
      num_features_(shard.num_features),
      num_classes_(shard.num_classes),
      alpha_(alpha_of(config)) {
  check_config(config_);
  HALOGEN_USER_CHECK(comm.device() == device_, "the model runs on %s but the communicator moves %s buffers",
                     device_name(device_), device_name(comm.device()));
  HALOGEN_USER_CHECK(shard.num_classes >= 2,
                     "shard %d: the graph has %d classes; node classification needs >= 2", shard.part,
                     shard.num_classes);
  HALOGEN_USER_CHECK(shard.num_features >= 1, "shard %d: the graph has no node features", shard.part);
  const int layers = config_.layers;
  theta_.assign(layers + 1, 0.0f);
  for (int l = 1; l <= layers; ++l) theta_[l] = theta_of(config_, l);
  // Registration order = parameter layer order, so the reducer's buckets follow the backward.
  w_in_ = store_.add("input.weight", 0, num_features_, hidden_, false);
  b_in_ = store_.add("input.bias", 0, 1, hidden_, true);
  for (int l = 1; l <= layers; ++l)
    w_conv_.push_back(store_.add(strformat("conv%d.weight", l), l, hidden_, hidden_, false));
  w_out_ = store_.add("output.weight", layers + 1, hidden_, num_classes_, false);
  b_out_ = store_.add("output.bias", layers + 1, 1, num_classes_, true);
  store_.allocate(device_);
  initialize_parameters();
  {  // the host copy of the normalised adjacency is freed once it is on the device
    const graph::LocalGraph local = graph::build_local_graph(shard, graph::Normalization::gcn);
    adjacency_ =
        std::make_unique<DistributedAdjacency>(comm, local, shard.plan, hidden_, device_, stream_.get());
  }
  adjacency_->set_clock(clock_.get());
  adjacency_->set_overlap(config_.overlap);
  if (release != nullptr) {
    std::vector<int64_t>().swap(release->indptr);
    release->indptr.assign(1, 0);
    std::vector<int32_t>().swap(release->indices);
    std::vector<float>().swap(release->weight);
    std::vector<int64_t>().swap(release->degree_owned);
    std::vector<int64_t>().swap(release->degree_halo);
  }
  const int64_t n = num_owned_, h = hidden_;
  features_ = Tensor(n, num_features_, device_);
  features_.copy_from_host(shard.features.data(), n * num_features_);
  if (release != nullptr) std::vector<float>().swap(release->features);
  labels_ = NodeLabels(shard, device_);
  dropped_features_ = Tensor(n, num_features_, device_);
  h0_ = Tensor(n, h, device_);
  inputs_ = Tensor(input_rows(layers, n, num_halo_), h, device_);
  mixes_ = Tensor(layers * n, h, device_);
  logits_ = Tensor(n, num_classes_, device_);
  grad_logits_ = Tensor(n, num_classes_, device_);
  for (Tensor& g : grad_inputs_) g = Tensor(n, h, device_);
  grad_h0_ = Tensor(n, h, device_);
  for (Tensor* t : {&dropped_features_, &h0_, &inputs_, &mixes_, &logits_, &grad_logits_, &grad_inputs_[0],
                    &grad_inputs_[1], &grad_h0_})
    t->zero();
}

void Gcnii::initialize_parameters() {
  std::vector<float> host(store_.total_size(), 0.0f);
  for (int k = 0; k < store_.count(); ++k) {
    const ParameterInfo& p = store_.info(k);
    // nn.Linear: +-1/sqrt(fan_in) for weight and bias (a bias's fan-in is its weight's rows); the reference's
    // GraphConvolution: +-1/sqrt(out_features) = 1/sqrt(H), the same for a square W_l.
    const int64_t fan_in = k == b_in_ ? num_features_ : k == b_out_ ? hidden_ : p.rows;
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    const uint64_t stream = rng::stream_id(rng::kWeightInit, static_cast<uint32_t>(k));
    for (int64_t e = 0; e < p.size(); ++e)
      host[p.offset + e] = static_cast<float>(
          (2.0 * rng::uniform(config_.seed, stream, static_cast<uint64_t>(e)) - 1.0) * bound);
  }
  store_.params().copy_from_host(host.data(), store_.total_size());
}

void Gcnii::forward(int64_t epoch, bool training) {
  const float p = training ? config_.dropout : 0.0f;
  const kernels::Stream stream = stream_.get();
  const Span<const int64_t> gids = labels_.gids();
  auto dropout_params = [&](int l, bool relu) {
    return kernels::EpilogueParams{relu, p, config_.seed, dropout_stream(epoch, l)};
  };
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::dropout(features_.matrix(), gids, dropout_params(0, false), dropped_features_.matrix(),
                     Matrix<float>{}, stream);
  }
  {
    PhaseScope timer(*clock_, Phase::gemm, stream);
    kernels::gemm(dropped_features_.matrix(), false, store_.param(w_in_), false, h0_.matrix(), 1.0f, 0.0f,
                  stream);
  }
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    const Matrix<float> b_in = store_.param(b_in_);
    kernels::bias_relu_dropout(h0_.matrix(), Span<const float>{b_in.data, hidden_, b_in.device}, gids,
                               kernels::EpilogueParams{true, 0.0f, config_.seed, 0}, Matrix<float>{}, stream);
    kernels::dropout(h0_.matrix(), gids, dropout_params(1, false), input(1), Matrix<float>{}, stream);
  }
  for (int l = 1; l <= config_.layers; ++l) {
    Matrix<float> s = mix(l), out = input(l + 1);
    adjacency_->forward(input(l, /*with_halo=*/true), s);  // Â d_l; d_l's halo rows land over d_{l+1} ..
    {
      PhaseScope timer(*clock_, Phase::elementwise, stream);
      kernels::scale_add(alpha_, h0_.matrix(), 1.0f - alpha_, s, stream);  // s_l
      kernels::scale_add(1.0f - theta_[l], s, 0.0f, out, stream);
    }
    {
      PhaseScope timer(*clock_, Phase::gemm, stream);
      kernels::gemm(s, false, store_.param(w_conv_[l - 1]), false, out, theta_[l], 1.0f, stream);
    }
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::bias_relu_dropout(out, Span<const float>{}, gids, dropout_params(l + 1, true), Matrix<float>{},
                               stream);
  }
  PhaseScope timer(*clock_, Phase::gemm, stream);
  kernels::gemm(input(config_.layers + 1), false, store_.param(w_out_), false, logits_.matrix(), 1.0f, 0.0f,
                stream);
  const Matrix<float> b_out = store_.param(b_out_);
  kernels::add_bias(logits_.matrix(), Span<const float>{b_out.data, num_classes_, b_out.device}, stream);
}

double Gcnii::train_step_local(int64_t epoch, float loss_scale, GradientReducer* reducer) {
  const kernels::Stream stream = stream_.get();
  const int layers = config_.layers;
  const float p = config_.dropout;
  store_.zero_grads(stream);
  forward(epoch, /*training=*/true);
  double loss_sum;
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    loss_sum = labels_.loss(logits(), 0, loss_scale, grad_logits_.matrix(), stream);
  }
  if (reducer != nullptr) reducer->begin(stream);
  auto bias_grad = [&](int index) {
    const Matrix<float> g = store_.grad(index);
    return Span<float>{g.data, g.cols, g.device};
  };
  Matrix<float> g = grad_inputs_[0].matrix();  // g_{l+1}, then G_l in place
  {
    PhaseScope timer(*clock_, Phase::gemm, stream);
    kernels::gemm(input(layers + 1), true, grad_logits_.matrix(), false, store_.grad(w_out_), 1.0f, 0.0f,
                  stream);
    kernels::gemm(grad_logits_.matrix(), false, store_.param(w_out_), true, g, 1.0f, 0.0f, stream);
  }
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::bias_backward(grad_logits_.matrix(), bias_grad(b_out_), stream);
    kernels::fill(grad_h0_.span(), 0.0f, stream);
  }
  if (reducer != nullptr) reducer->layer_ready(layers + 1);
  for (int l = layers; l >= 1; --l) {
    Matrix<float> s = mix(l), next = grad_inputs_[(layers - l + 1) % 2].matrix();
    {
      PhaseScope timer(*clock_, Phase::elementwise, stream);
      kernels::relu_dropout_backward(g, input(l + 1), p, Span<float>{}, stream);  // G_l
    }
    {
      PhaseScope timer(*clock_, Phase::gemm, stream);
      kernels::gemm(s, true, g, false, store_.grad(w_conv_[l - 1]), theta_[l], 0.0f, stream);  // dW_l
    }
    if (reducer != nullptr) reducer->layer_ready(l);
    {
      PhaseScope timer(*clock_, Phase::elementwise, stream);
      kernels::scale_add(1.0f - theta_[l], g, 0.0f, s, stream);  // ds_l over s_l, read no more
    }
    {
      PhaseScope timer(*clock_, Phase::gemm, stream);
      kernels::gemm(g, false, store_.param(w_conv_[l - 1]), true, s, theta_[l], 1.0f, stream);
    }
    {
      PhaseScope timer(*clock_, Phase::elementwise, stream);
      kernels::scale_add(alpha_, s, 1.0f, grad_h0_.matrix(), stream);  // dLoss/dh_0 += alpha ds_l
      kernels::scale_add(1.0f - alpha_, s, 0.0f, s, stream);
    }
    adjacency_->transpose_overwriting(s, next);  // g_l = (1 - alpha) Â^T ds_l
    g = next;
  }
  {
    // dLoss/dZ_0 = (dLoss/dh_0 + g_1 o mask_1) o relu'(Z_0); d_1 > 0 only where h_0 > 0, so the first product
    // carries relu' already.
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::relu_dropout_backward(g, input(1), p, Span<float>{}, stream);
    kernels::scale_add(1.0f, g, 1.0f, grad_h0_.matrix(), stream);
    kernels::relu_dropout_backward(grad_h0_.matrix(), h0_.matrix(), 0.0f, bias_grad(b_in_), stream);
  }
  {
    PhaseScope timer(*clock_, Phase::gemm, stream);
    kernels::gemm(dropped_features_.matrix(), true, grad_h0_.matrix(), false, store_.grad(w_in_), 1.0f, 0.0f,
                  stream);
  }
  if (reducer != nullptr) reducer->layer_ready(0);
  return loss_sum;
}

int Gcnii::first_nonfinite_layer_local(int64_t epoch) {
  forward(epoch, /*training=*/true);
  for (int l = 0; l < num_layers(); ++l) {
    const Matrix<const float> z = layer_output(l);
    const double sum =
        kernels::sum_squares(Span<const float>{z.data, z.rows * z.cols, z.device}, stream_.get());
    if (!std::isfinite(sum)) return l;
  }
  return -1;
}

int64_t parameter_count(const ModelConfig& c, int64_t num_features, int64_t num_classes) {
  return num_features * c.hidden + c.hidden + c.layers * c.hidden * c.hidden + c.hidden * num_classes +
         num_classes;
}

MemoryBreakdown estimate(const ModelConfig& c, const RankShape& s) {
  check_config(c);
  const int64_t f = sizeof(float), n = s.num_owned, h = s.num_halo, width = c.hidden;
  MemoryBreakdown m;
  m.structure =
      DistributedAdjacency::matrix_bytes_for(n, h, s.nnz + n, s.halo_nnz, s.own_symmetric,
                                             value_layout_of(graph::Normalization::gcn, false), s.device);
  m.halo = DistributedAdjacency::exchange_bytes_for(h, s.num_send, width);
  m.features = n * s.num_features * f + NodeLabels::bytes_for(n, s.num_split_rows);
  // X_0, h_0, d_1 .. d_{L+1} with the halo rows, s_1 .. s_L, the logits
  m.activations = (n * s.num_features + n * width + input_rows(c.layers, n, h) * width +
                   c.layers * n * width + n * s.num_classes) *
                  f;
  m.gradients = n * s.num_classes * f;  // dLoss/dlogits
  m.workspace = 3 * n * width * f;      // g_l in turn, dLoss/dh_0
  m.parameters = 2 * parameter_count(c, s.num_features, s.num_classes) * f;
  return m;
}

// A real option of this model, kept in ModelConfig::values under its name (nn::real_option, [min, max]).
ModelOption value_option(const char* name, const char* key, std::string help, double min, double max,
                         float fallback) {
  const std::string value_name = name;
  return real_option(
      name, key, std::move(help), min, max, /*max_open=*/false,
      [value_name, fallback](const ModelConfig& c) -> OptionValue {
        return real_value(c, value_name.c_str(), fallback);
      },
      [value_name](ModelConfig& c, const OptionValue& v) { c.values[value_name] = v; });
}

}  // namespace

ModelSpec gcnii_model() {
  ModelSpec spec;
  spec.name = "gcnii";
  spec.description = "Chen et al., initial residual and identity mapping";
  spec.options = {
      value_option("alpha", "alpha", "GCNII: initial residual alpha, s = (1 - alpha) Â h + alpha h_0", 0.0,
                  1.0, kDefaultAlpha),
      value_option("lambda", "lambda", "GCNII: identity mapping strength, theta_l = log(lambda / l + 1)", 0.0,
                  1e6, kDefaultLambda),
      value_option(
          "conv-weight-decay", "conv_weight_decay",
          "GCNII: L2 weight decay of the convolutions' weights (--weight-decay: the two dense layers)", 0.0,
          1e6, kDefaultConvWeightDecay),
  };
  spec.defaults.lr = 0.01f;
  spec.defaults.weight_decay = 5e-4f;
  spec.defaults.epochs = 1500;
  spec.defaults.patience = 100;
  spec.defaults.best_by = "loss";  // the reference keeps and stops by the lowest validation loss
  spec.weight_decay = [](const ModelConfig& c, int parameter_layers, float weight_decay, bool all_layers) {
    // Layers 0 and L + 1 are dense, 1 .. L convolutions; --weight-decay-all-layers: --weight-decay on all.
    std::vector<float> decay(parameter_layers, all_layers ? weight_decay : conv_weight_decay_of(c));
    if (parameter_layers > 0) decay.front() = decay.back() = weight_decay;
    return decay;
  };
  spec.weight_decay_scope = "dense layers; convolutions: --conv-weight-decay";
  spec.build = [](const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard,
                  graph::Shard* release, Device device) -> std::unique_ptr<NodeModel> {
    return std::make_unique<Gcnii>(config, comm, shard, release, device);
  };
  spec.estimate = estimate;
  spec.parameter_count = parameter_count;
  spec.summary = [](const ModelConfig& c) {
    return strformat(", alpha %g, lambda %g, conv weight decay %g", alpha_of(c), lambda_of(c),
                     conv_weight_decay_of(c));
  };
  return spec;
}

}  // namespace halogen::nn
