#include "nn/model.h"

#include <algorithm>
#include <cmath>

#include "comm/halo_exchange.h"
#include "core/error.h"
#include "core/rng.h"
#include "graph/local_graph.h"
#include "kernels/ops.h"

namespace halogen::nn {
namespace {

graph::Normalization normalization_of(ConvKind kind) {
  switch (kind) {
    case ConvKind::sage:
      return graph::Normalization::mean;
    case ConvKind::gin:
      return graph::Normalization::sum;
    default:
      return graph::Normalization::gcn;  // gcn, and appnp's propagation
  }
}

// GAT layer l's heads and whether it concatenates them (hidden layers) or averages them (the output layer).
int64_t gat_heads_of(const ModelConfig& config, int l) {
  return l + 1 < config.layers ? config.gat_heads : config.gat_output_heads;
}

// The widest matrix any layer (or APPNP's propagation) exchanges (narrower side first).
int64_t max_exchange_width(const ModelConfig& config, const std::vector<int64_t>& widths) {
  int64_t width = 0;
  if (config.kind == ConvKind::gat) {
    for (int l = 0; l < config.layers; ++l) {
      const int64_t heads = gat_heads_of(config, l);
      const bool concat = l + 1 < config.layers;
      width = std::max(width, GatConv::exchange_width(heads, concat ? widths[l + 1] / heads : widths[l + 1]));
    }
    return width;
  }
  for (size_t l = 0; l + 1 < widths.size(); ++l)
    width = std::max(width, GraphConv::exchange_width(config.kind, widths[l], widths[l + 1], config.hidden));
  if (config.kind == ConvKind::appnp && config.appnp_k > 0) width = std::max(width, widths.back());
  return width;
}

// X_0 lives in the workspace: it is read by layer 0's forward alone (its backward does not read it).
bool input_in_workspace(const ModelConfig& config, const std::vector<int64_t>& widths) {
  return config.kind != ConvKind::gat &&
         !GraphConv::backward_reads_input(config.kind, widths[0], widths[1], config.hidden, config.gin_learn_eps);
}

// Layer l's scratch (not gat), with recomputation where ModelConfig::recompute applies (hidden layers), and
// the BF16 Â X where Model::keeps_bf16_aggregate applies.
GraphConv::ScratchPlan layer_scratch(const ModelConfig& config, const std::vector<int64_t>& widths, int l,
                                     int64_t num_owned, int64_t num_halo, bool dense_input) {
  return GraphConv::scratch_plan(config.kind, widths[l], widths[l + 1], num_owned, num_halo, config.hidden,
                                 config.gin_learn_eps, config.recompute && !config.bf16 && l > 0,
                                 Model::keeps_bf16_aggregate(config, widths, l, dense_input));
}

}  // namespace

bool Model::stages_input(const ModelConfig& config, const std::vector<int64_t>& widths, bool dense_input) {
  // GraphConv::can_take_staged_input (checked by set_input_staged): a GCN layer 0 that aggregates first reads
  // X_0 in its forward alone.
  return config.bf16 && dense_input && config.kind == ConvKind::gcn &&
         !GraphConv::transform_first(config.kind, widths[0], widths[1], config.hidden);
}

bool Model::keeps_bf16_aggregate(const ModelConfig& config, const std::vector<int64_t>& widths, int l,
                                 bool dense_input) {
  if (!config.bf16 || config.kind == ConvKind::gat || config.kind == ConvKind::appnp) return false;
  if (GraphConv::transform_first(config.kind, widths[l], widths[l + 1], config.hidden)) return false;
  // Layer 0's FP32 Â X would need room beside X_0 when X_0 lives in the workspace and is written (not staged):
  // it keeps its Â X in FP32 then (a GIN with fixed eps, or a GCN on sparse features).
  return l > 0 || !input_in_workspace(config, widths) || stages_input(config, widths, dense_input);
}

bool Model::keeps_bf16_activation(const ModelConfig& config, const std::vector<int64_t>& widths, int l,
                                  bool dense_input) {
  // APPNP's layer 0 on sparse features multiplies the CSR input (spmm), which is not formed block by block.
  return config.bf16 && l >= 1 && l < config.layers &&
         GraphConv::can_give_bf16_output(config.kind, widths[l - 1], widths[l]) &&
         !(l == 1 && config.kind == ConvKind::appnp && !dense_input);
}

int64_t Model::bf16_block_floats(const ModelConfig& config, const std::vector<int64_t>& widths, int64_t num_owned,
                                 bool dense_input) {
  int64_t floats = 0;
  for (int l = 0; l < config.layers; ++l)
    floats = std::max(floats, GraphConv::block_floats(widths[l], widths[l + 1], num_owned,
                                                      keeps_bf16_activation(config, widths, l, dense_input),
                                                      keeps_bf16_activation(config, widths, l + 1, dense_input)));
  return floats;  // the model widens X_l through layer l (GraphConv::widen_input): within its input block
}

Model::WorkspacePlan Model::workspace_plan(const ModelConfig& config, const std::vector<int64_t>& widths,
                                           int64_t num_owned, int64_t num_halo, bool dense_input) {
  WorkspacePlan plan;
  int64_t forward = 0, backward = 0;  // the widest forward and backward scratch of any layer
  if (config.kind != ConvKind::gat) {  // GatConv keeps its own scratch
    for (int l = 0; l < config.layers; ++l) {
      const GraphConv::ScratchPlan scratch = layer_scratch(config, widths, l, num_owned, num_halo, dense_input);
      forward = std::max(forward, scratch.forward);
      // Layer 0 computes no input gradient: a GCN or SAGE layer that aggregates first then needs no backward
      // scratch (its weight gradients read Â X and X), but the rows it widens a BF16 Â X into.
      const bool no_backward_scratch =
          l == 0 && (config.kind == ConvKind::gcn || config.kind == ConvKind::sage) &&
          !GraphConv::transform_first(config.kind, widths[0], widths[1], config.hidden);
      if (!no_backward_scratch)
        backward = std::max(backward, scratch.backward);
      else if (keeps_bf16_aggregate(config, widths, l, dense_input))
        backward = std::max(backward, GraphConv::widen_floats(config.kind, widths[0], widths[1], num_owned,
                                                              config.hidden));
    }
  }
  // The hidden layers' gradients: dZ_l (l < L-1) is written by layer l+1's backward, which reads dZ_{l+1}
  // and its scratch, and read by layer l's backward, which writes dZ_{l-1} and uses its scratch: two regions
  // after the backward scratch, used in turn, keep every pair that is alive at once apart.
  int64_t widest = 0;
  for (int l = 0; l + 1 < config.layers; ++l) widest = std::max(widest, num_owned * widths[l + 1]);
  plan.gradients_at = backward;
  plan.gradient_region = widest;
  plan.floats = std::max(forward, backward + std::min(config.layers - 1, 2) * widest);
  // X_0 is read by layer 0's forward alone when its backward does not read it; layer 0 (aggregate first) has
  // no forward scratch then, so X_0 can take the workspace during that forward. A staged X_0 (stages_input)
  // is never written: it takes no room, and layer 0's forward scratch (its FP32 Â X) may be there.
  plan.input_in_workspace = input_in_workspace(config, widths);
  const bool staged = stages_input(config, widths, dense_input);
  const int64_t input_floats =
      staged ? 0 : (activation_has_halo_rows(config, widths, 0) ? num_owned + num_halo : num_owned) * widths[0];
  if (plan.input_in_workspace && !staged) {
    HALOGEN_ASSERT(layer_scratch(config, widths, 0, num_owned, num_halo, dense_input).forward == 0);
    plan.floats = std::max(plan.floats, input_floats);
  }
  // X_L is written by the last layer's forward (beside its scratch, and beside its input when that is X_0 in
  // the workspace) and read by the loss or the propagation: no backward reads it.
  const int last = config.layers - 1;
  plan.output_at =
      config.kind == ConvKind::gat ? 0 : layer_scratch(config, widths, last, num_owned, num_halo, dense_input).forward;
  if (last == 0 && plan.input_in_workspace) plan.output_at = std::max(plan.output_at, input_floats);
  plan.output_rows = activation_has_halo_rows(config, widths, config.layers) ? num_owned + num_halo : num_owned;
  plan.floats = std::max(plan.floats, plan.output_at + plan.output_rows * widths.back());
  return plan;
}

bool Model::activation_has_halo_rows(const ModelConfig& config, const std::vector<int64_t>& widths, int l) {
  if (config.bf16) return false;  // the halo rows arrive in the BF16 staging buffer
  if (l == config.layers) return config.kind == ConvKind::appnp && config.appnp_k > 0;
  if (config.kind == ConvKind::gat) return false;  // it exchanges X W
  return !GraphConv::transform_first(config.kind, widths[l], widths[l + 1], config.hidden);  // X_l is exchanged
}

std::vector<int64_t> Model::layer_widths(const ModelConfig& config, int64_t num_features, int64_t num_classes) {
  HALOGEN_USER_CHECK(config.layers >= 1, "--layers must be at least 1 (got %d)", config.layers);
  HALOGEN_USER_CHECK(config.layers == 1 || config.hidden >= 1, "--hidden must be at least 1");
  HALOGEN_USER_CHECK(config.kind != ConvKind::gin || config.hidden >= 1,
                     "--hidden (GIN's MLP width) must be >= 1");
  HALOGEN_USER_CHECK(config.kind != ConvKind::appnp || config.appnp_k >= 0, "--appnp-k must be >= 0 (got %d)",
                     config.appnp_k);
  HALOGEN_USER_CHECK(
      config.kind != ConvKind::appnp || (config.appnp_alpha >= 0.0f && config.appnp_alpha <= 1.0f),
      "--appnp-alpha must be in [0, 1] (got %g)", config.appnp_alpha);
  HALOGEN_USER_CHECK(config.kind != ConvKind::gat || (config.gat_heads >= 1 && config.gat_output_heads >= 1),
                     "--heads and --output-heads must be at least 1 (got %d and %d)", config.gat_heads,
                     config.gat_output_heads);
  HALOGEN_USER_CHECK(config.kind != ConvKind::gat ||
                         (config.attention_dropout >= 0.0f && config.attention_dropout < 1.0f),
                     "--attention-dropout must be in [0, 1) (got %g)", config.attention_dropout);
  std::vector<int64_t> widths{num_features};
  for (int l = 1; l < config.layers; ++l)
    widths.push_back(config.kind == ConvKind::gat ? config.hidden * config.gat_heads : config.hidden);
  widths.push_back(num_classes);
  return widths;
}

namespace {

template <typename T>
void release(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

}  // namespace

Model::Model(const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard, graph::Shard* release_shard,
             Device device)
    : config_(config), comm_(comm), device_(device), stream_(device), clock_(make_phase_clock(device)),
      num_owned_(shard.num_owned()), num_halo_(shard.num_halo()) {
  check_inputs(shard);
  widths_ = layer_widths(config, shard.num_features, shard.num_classes);
  {  // The nonzero count decides the input-dropout path (see model.h), which build_layers needs for GAT.
    int64_t nonzeros = 0;
    for (float value : shard.features) nonzeros += value != 0.0f;
    sparse_input_ = uses_sparse_input(nonzeros, num_owned_, shard.num_features);
  }
  // Dense features are copied (BF16: rounded) and the shard's released before the model's buffers exist, so
  // that the shard's FP32 copy never sits beside them (the peak of a BF16 run was here); the sparse input path
  // needs the layers (build_sparse_first_layer).
  if (!sparse_input_) copy_and_release_features(shard, release_shard);
  build_layers(shard);
  if (release_shard != nullptr) {
    release(release_shard->indptr);
    release_shard->indptr.assign(1, 0);
    release(release_shard->indices);
    release(release_shard->weight);
    release(release_shard->degree_owned);
    release(release_shard->degree_halo);
  }
  if (sparse_input_) copy_and_release_features(shard, release_shard);
  node_labels_ = NodeLabels(shard, device_);
  allocate_activations();
}

void Model::check_inputs(const graph::Shard& shard) const {
  HALOGEN_USER_CHECK(comm_.device() == device_, "the model runs on %s but the communicator moves %s buffers",
                     device_name(device_), device_name(comm_.device()));
  HALOGEN_USER_CHECK(shard.num_classes >= 2, "shard %d: the graph has %d classes; node classification needs >= 2",
                     shard.part, shard.num_classes);
  HALOGEN_USER_CHECK(shard.num_features >= 1, "shard %d: the graph has no node features", shard.part);
  HALOGEN_USER_CHECK(config_.dropout >= 0.0f && config_.dropout < 1.0f, "--dropout must be in [0, 1) (got %g)",
                     config_.dropout);
  HALOGEN_USER_CHECK(!(config_.edge_weight && config_.kind == ConvKind::gat),
                     "--edge-weight is not supported by --model gat (attention computes its own edge weights)");
  if (config_.edge_weight) {
    // Also checked collectively (one message per job) by `halogen train` before the model is built.
    HALOGEN_USER_CHECK(shard.nnz() == 0 || static_cast<int64_t>(shard.weight.size()) == shard.nnz(),
                       "--edge-weight: graph %s has no edge weights (part %d has no /csr/weight)",
                       shard.graph_name.c_str(), shard.part);
    for (float w : shard.weight)
      HALOGEN_USER_CHECK(w >= 0.0f,
                         "--edge-weight: graph %s has a negative edge weight (%g) in part %d; the "
                         "normalisations need weights >= 0",
                         shard.graph_name.c_str(), w, shard.part);
  }
}

graph::EdgeWeighting Model::exchange_weighted_degrees(const graph::Shard& shard) {
  const int64_t n = num_owned_, h = num_halo_;
  graph::EdgeWeighting weighting;
  weighting.degree_owned = graph::weighted_owned_degrees(shard);
  // Rounded to float on every rank (the exchange moves floats), so an owner and its halo copies agree
  // exactly.
  std::vector<float> degrees(n + h, 0.0f);
  for (int64_t r = 0; r < n; ++r) {
    degrees[r] = static_cast<float>(weighting.degree_owned[r]);
    weighting.degree_owned[r] = degrees[r];
  }
  Tensor buffer(n + h, 1, device_);
  buffer.copy_from_host(degrees.data(), n + h);
  comm::HaloExchange exchange(comm_, shard.plan, n, 1);
  exchange.start_forward(buffer.matrix(), stream_.get());
  exchange.finish_forward(stream_.get());
  stream_.synchronize();  // the unpacked halo rows are queued on the stream
  buffer.copy_to_host(degrees.data());
  weighting.degree_halo.assign(degrees.begin() + n, degrees.end());
  return weighting;
}

void Model::build_layers(const graph::Shard& shard) {
  for (int l = 0; l < config_.layers; ++l)
    layers_.push_back(std::make_unique<GraphConv>(config_.kind, l, widths_[l], widths_[l + 1], store_,
                                                  config_.hidden, config_.gin_learn_eps, gat_heads_of(config_, l),
                                                  l + 1 < config_.layers, config_.gat_per_head_dropout));
  for (int l = 1; l < config_.layers; ++l) layers_[l]->set_recompute_aggregate(config_.recompute && !config_.bf16);
  store_.allocate(device_);
  store_.initialize(config_.seed);
  if (config_.kind == ConvKind::gat) {
    // Attention multiplies by its own per-edge weights: the adjacency keeps no matrix, only the exchange.
    attention_graph_ = std::make_unique<AttentionGraph>(shard, device_);
    graph::LocalGraph empty;
    empty.num_owned = num_owned_;
    empty.num_halo = num_halo_;
    auto no_entries = [](int64_t rows, int64_t cols) {
      graph::LocalCsr csr;
      csr.rows = rows;
      csr.cols = cols;
      csr.indptr.assign(rows + 1, 0);
      return csr;
    };
    empty.a_own = no_entries(num_owned_, num_owned_);
    empty.a_halo = no_entries(num_owned_, num_halo_);
    empty.a_own_t = no_entries(num_owned_, num_owned_);
    empty.a_halo_t = no_entries(num_halo_, num_owned_);
    adjacency_ = std::make_unique<DistributedAdjacency>(comm_, empty, shard.plan, max_exchange_width(config_, widths_),
                                                        device_, stream_.get(), config_.bf16);
  } else {  // the host copy of the normalised adjacency is freed once it is on the device
    graph::EdgeWeighting weighting;
    if (config_.edge_weight) weighting = exchange_weighted_degrees(shard);
    const graph::LocalGraph local = graph::build_local_graph(shard, normalization_of(config_.kind),
                                                             config_.edge_weight ? &weighting : nullptr);
    // At least width 1: an APPNP with K = 0 multiplies nothing but still owns the adjacency.
    const int64_t width = std::max<int64_t>(1, max_exchange_width(config_, widths_));
    adjacency_ = std::make_unique<DistributedAdjacency>(comm_, local, shard.plan, width, device_, stream_.get(),
                                                        config_.bf16);
  }
  if (config_.bf16) {  // the BF16 staging buffer, shared by the layers
    staging_ = Buffer<Bf16>((num_owned_ + num_halo_) * comm::HaloExchange::bf16_stride(adjacency_->max_width()),
                            device_);
    staging_.zero();
    for (auto& layer : layers_) layer->set_bf16_staging(staging());
  }
  adjacency_->set_clock(clock_.get());
  adjacency_->set_overlap(config_.overlap);
  if (gat_sparse_first_layer(config_) && sparse_input_)
    layers_[0]->gat_conv()->expect_sparse_input();  // copy_features gives it the CSR views
  workspace_plan_ = workspace_plan(config_, widths_, num_owned_, num_halo_, !sparse_input_);
  workspace_ = Tensor(workspace_plan_.floats, 1, device_);
  workspace_.zero();
  layers_[0]->set_input_is_scratch(workspace_plan_.input_in_workspace);  // X_0: read by layer 0's forward alone
  // BF16 features straight into the staging buffer (input_dropout), without X_0 in FP32.
  stage_input_ = stages_input(config_, widths_, !sparse_input_);
  layers_[0]->set_input_staged(stage_input_);
  for (int l = 0; l < num_layers(); ++l) {
    layers_[l]->set_bf16_aggregate(keeps_bf16_aggregate(config_, widths_, l, !sparse_input_));
    layers_[l]->set_bf16_output(keeps_bf16_activation(l + 1));
  }
  for (auto& layer : layers_) layer->allocate(*adjacency_, attention_graph_.get(), workspace_.span());
}

void Model::copy_and_release_features(const graph::Shard& shard, graph::Shard* release_shard) {
  copy_features(shard);
  if (release_shard != nullptr) release(release_shard->features);
}

void Model::copy_features(const graph::Shard& shard) {
  const int64_t n = num_owned_, f0 = shard.num_features;
  HALOGEN_ASSERT(static_cast<int64_t>(shard.features.size()) == n * f0);
  if (config_.bf16 && !sparse_input_) {  // rounded to BF16 on the host (in place on the CPU), then copied
    features_bf16_ = Buffer<Bf16>(n * f0, device_);
    std::vector<Bf16> rounded(device_ == Device::cpu ? 0 : shard.features.size());
    Bf16* out = device_ == Device::cpu ? features_bf16_.data() : rounded.data();
    for (int64_t i = 0; i < n * f0; ++i) out[i] = to_bf16(shard.features[i]);
    if (device_ != Device::cpu) features_bf16_.copy_from_host(rounded.data(), n * f0);
    return;
  }
  features_ = Tensor(n, f0, device_);
  features_.copy_from_host(shard.features.data(), features_.size());
  if (!sparse_input_) return;  // decided in the constructor
  std::vector<float> values;
  std::vector<int64_t> keys;
  std::vector<int32_t> positions;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < f0; ++c) {
      const float value = shard.features[r * f0 + c];
      if (value == 0.0f) continue;
      values.push_back(value);
      keys.push_back(shard.owned_gid[r] * f0 + c);
      positions.push_back(static_cast<int32_t>(r * f0 + c));
    }
  const int64_t nonzeros = static_cast<int64_t>(values.size());
  nonzero_values_ = Tensor(nonzeros, 1, device_);
  nonzero_values_.copy_from_host(values.data(), nonzeros);
  nonzero_dropped_ = Tensor(nonzeros, 1, device_);
  nonzero_key_ = Buffer<int64_t>(nonzeros, device_);
  nonzero_key_.copy_from_host(keys.data(), nonzeros);
  nonzero_position_ = Buffer<int32_t>(nonzeros, device_);
  nonzero_position_.copy_from_host(positions.data(), nonzeros);
  sparse_first_layer_ = layers_[0]->transform_first() || gat_sparse_first_layer(config_);
  if (sparse_first_layer_) build_sparse_first_layer(positions, f0);
}

bool Model::gat_sparse_first_layer(const ModelConfig& config) {
  // GAT's layer 0 with per-head dropout draws a mask per head: on the nonzeros only, with spmm products.
  return config.kind == ConvKind::gat && config.gat_per_head_dropout;
}

void Model::build_sparse_first_layer(const std::vector<int32_t>& positions, int64_t f0) {
  // Positions are row-major ascending: CSR order. Transpose by counting sort over columns.
  const int64_t n = num_owned_, nonzeros = static_cast<int64_t>(positions.size());
  std::vector<int64_t> indptr(n + 1, 0), t_indptr(f0 + 1, 0);
  std::vector<int32_t> columns(nonzeros), t_rows(nonzeros), t_order(nonzeros);
  for (int64_t i = 0; i < nonzeros; ++i) {
    const int64_t r = positions[i] / f0, c = positions[i] % f0;
    columns[i] = static_cast<int32_t>(c);
    ++indptr[r + 1];
    ++t_indptr[c + 1];
  }
  for (int64_t r = 0; r < n; ++r) indptr[r + 1] += indptr[r];
  for (int64_t c = 0; c < f0; ++c) t_indptr[c + 1] += t_indptr[c];
  std::vector<int64_t> next(t_indptr.begin(), t_indptr.end() - 1);
  for (int64_t i = 0; i < nonzeros; ++i) {
    const int64_t slot = next[columns[i]]++;
    t_rows[slot] = positions[i] / static_cast<int32_t>(f0);
    t_order[slot] = static_cast<int32_t>(i);
  }
  input_indptr_ = Buffer<int64_t>(n + 1, device_);
  input_indptr_.copy_from_host(indptr.data(), n + 1);
  input_t_indptr_ = Buffer<int64_t>(f0 + 1, device_);
  input_t_indptr_.copy_from_host(t_indptr.data(), f0 + 1);
  input_columns_ = Buffer<int32_t>(nonzeros, device_);
  input_columns_.copy_from_host(columns.data(), nonzeros);
  input_t_rows_ = Buffer<int32_t>(nonzeros, device_);
  input_t_rows_.copy_from_host(t_rows.data(), nonzeros);
  input_t_order_ = Buffer<int32_t>(nonzeros, device_);
  input_t_order_.copy_from_host(t_order.data(), nonzeros);
  input_t_values_ = Tensor(nonzeros, 1, device_);
  const kernels::CsrView x{n, f0, nonzeros, input_indptr_.data(), input_columns_.data(), nonzero_dropped_.data(),
                           device_};
  const kernels::CsrView x_t{f0, n, nonzeros, input_t_indptr_.data(), input_t_rows_.data(), input_t_values_.data(),
                             device_};
  if (GatConv* gat = layers_[0]->gat_conv()) {
    gat->set_sparse_input(GatConv::SparseInput{
        x, x_t, nonzero_values_.matrix(), Span<const int64_t>{nonzero_key_.data(), nonzeros, nonzero_key_.device()},
        Span<const int32_t>{input_t_order_.data(), nonzeros, input_t_order_.device()}, nonzero_dropped_.matrix(),
        input_t_values_.matrix()});
    return;
  }
  layers_[0]->set_sparse_input(x, x_t);
}

void Model::allocate_activations() {
  const int64_t n = num_owned_, h = num_halo_;
  for (int l = 0; l <= num_layers(); ++l) {
    const int64_t rows = activation_has_halo_rows(config_, widths_, l) ? n + h : n;
    const bool in_workspace = l == num_layers() || (l == 0 && workspace_plan_.input_in_workspace);
    const bool bf16 = keeps_bf16_activation(l);
    activations_.emplace_back(in_workspace || bf16 ? 0 : rows, widths_[l], device_);
    activations_.back().zero();
    activations_bf16_.emplace_back(bf16 ? n : 0, widths_[l], device_);
    activations_bf16_.back().zero();
    if (bf16)
      layers_[l]->set_bf16_input(Matrix<const Bf16>{activations_bf16_[l].data(), n, widths_[l], widths_[l], device_});
  }
  blocks_ = Tensor(bf16_block_floats(config_, widths_, n, !sparse_input_), 1, device_);
  blocks_.zero();
  for (auto& layer : layers_) layer->set_bf16_blocks(blocks_.span());
  // Only GAT records a mask (ELU's derivative is not read off its output); the relu epilogue's backward reads
  // the epilogue's output instead (kernels::relu_dropout_backward). The input dropout's mask is never read.
  masks_.emplace_back();
  for (int l = 1; l < num_layers(); ++l)
    masks_.emplace_back(config_.kind == ConvKind::gat ? n : 0, widths_[l], device_);
  for (int l = 0; l < num_layers(); ++l) grads_.emplace_back(l + 1 == num_layers() ? n : 0, widths_[l + 1], device_);
  if (config_.kind == ConvKind::appnp && config_.appnp_k > 0) {
    const int64_t c = widths_.back();
    for (int i = 0; i < 2; ++i) {
      propagation_[i] = Tensor(config_.bf16 ? n : n + h, c, device_);
      propagation_[i].zero();
      propagation_grads_[i] = Tensor(n, c, device_);
    }
    logits_buffer_ = (config_.appnp_k - 1) % 2;
  }
}

int64_t Model::parameter_count(const ModelConfig& config, int64_t num_features, int64_t num_classes) {
  const std::vector<int64_t> widths = layer_widths(config, num_features, num_classes);
  int64_t count = 0;
  for (int l = 0; l < config.layers; ++l) {
    if (config.kind == ConvKind::gat) {
      const int64_t heads = gat_heads_of(config, l);
      const bool concat = l + 1 < config.layers;
      count += GatConv::parameter_count(widths[l], heads, concat ? widths[l + 1] / heads : widths[l + 1], concat);
      continue;
    }
    count += GraphConv::parameter_count(config.kind, widths[l], widths[l + 1], config.hidden,
                                        config.gin_learn_eps);
  }
  return count;
}

bool Model::uses_sparse_input(int64_t nonzeros, int64_t n, int64_t f) {
  constexpr double kSparseInputDensity = 0.25;
  // No nonzeros at all (a rank whose features are all zero) takes the dense path: a memory estimate's RankShape
  // says "sparse" by a nonzero count > 0 (RankShape::sparse_feature_nonzeros).
  return n > 0 && nonzeros > 0 && static_cast<double>(nonzeros) <= kSparseInputDensity * static_cast<double>(n * f) &&
         n * f < (int64_t{1} << 31);
}

MemoryBreakdown Model::estimate_breakdown(const ModelConfig& config, const RankShape& s) {
  const std::vector<int64_t> widths = layer_widths(config, s.num_features, s.num_classes);
  const int64_t f = sizeof(float), n = s.num_owned, h = s.num_halo;
  MemoryBreakdown m;
  const int64_t num_parameters = parameter_count(config, s.num_features, s.num_classes);
  const bool gat = config.kind == ConvKind::gat;
  const int64_t attention_edges = AttentionGraph::edges_for(n, s.nnz);
  const bool dense_input = s.sparse_feature_nonzeros == 0;
  const WorkspacePlan workspace = workspace_plan(config, widths, n, h, dense_input);
  for (int l = 0; l < config.layers; ++l) {
    if (gat) {
      const int64_t heads = gat_heads_of(config, l);
      const bool concat = l + 1 < config.layers;
      m.activations += GatConv::scratch_bytes(heads, concat ? widths[l + 1] / heads : widths[l + 1], concat, n, h,
                                              attention_edges, widths[l], config.gat_per_head_dropout,
                                              l == 0 && s.sparse_feature_nonzeros > 0 && gat_sparse_first_layer(config));
      if (l > 0) m.activations += n * widths[l] * f;  // ELU/dropout mask of the layer's input
    } else {
      const GraphConv::ScratchPlan scratch = layer_scratch(config, widths, l, n, h, dense_input);
      m.activations += scratch.kept * f + scratch.kept_bf16 * static_cast<int64_t>(sizeof(Bf16));
    }
    if (l + 1 < config.layers && keeps_bf16_activation(config, widths, l + 1, dense_input))  // X_{l+1} in BF16
      m.activations += n * widths[l + 1] * static_cast<int64_t>(sizeof(Bf16));
    else if (l + 1 < config.layers)  // X_{l+1}; X_L is in the workspace
      m.activations += (activation_has_halo_rows(config, widths, l + 1) ? n + h : n) * widths[l + 1] * f;
  }
  m.gradients += n * widths.back() * f;  // the last layer's; the hidden layers' are in the workspace
  m.workspace = (workspace.floats + bf16_block_floats(config, widths, n, dense_input)) * f;
  if (!workspace.input_in_workspace)  // X_0 as an activation of its own (else in the workspace, or staged)
    m.activations += (activation_has_halo_rows(config, widths, 0) ? n + h : n) * widths[0] * f;
  if (config.kind == ConvKind::appnp && config.appnp_k > 0) {  // propagation P_k and G_k, two of each
    m.activations += 2 * (config.bf16 ? n : n + h) * widths.back() * f;
    m.gradients += 2 * n * widths.back() * f;
  }
  m.parameters = 2 * num_parameters * f;                                       // parameters + gradients
  // features (BF16 when dense under bf16), gids, labels, splits
  const int64_t feature_bytes = config.bf16 && s.sparse_feature_nonzeros == 0 ? 2 : f;
  m.features = n * widths[0] * feature_bytes + NodeLabels::bytes_for(n, s.num_split_rows);
  m.features += s.sparse_feature_nonzeros * (2 * f + 8 + 4);                   // sparse input dropout
  const bool first_transforms = config.kind == ConvKind::appnp || gat_sparse_first_layer(config) ||
                                (!gat && (config.kind == ConvKind::gin ? config.hidden : widths[1]) < widths[0]);
  if (s.sparse_feature_nonzeros > 0 && first_transforms)  // sparse first layer (CSR + transpose)
    m.features += s.sparse_feature_nonzeros * (3 * 4 + f) + (n + 1 + widths[0] + 1) * 8;
  // Adjacency (A_own, A_halo, transposes, exchange buffers): GCN adds a diagonal entry to every row.
  const bool self_loops = config.kind == ConvKind::gcn || config.kind == ConvKind::appnp;
  const int64_t entries = gat ? 0 : s.nnz + (self_loops ? n : 0);  // gat: no matrix, its own attention graph
  if (gat) m.structure += AttentionGraph::bytes_for(n, h, attention_edges);
  const bool own_symmetric = !gat && s.own_symmetric && config.kind != ConvKind::sage;  // sage: mean, by row
  const ValueLayout layout =  // on the CPU, unweighted gcn/sage/gin keep factors instead of values
      gat ? ValueLayout::none : value_layout_of(normalization_of(config.kind), config.edge_weight);
  m.structure += DistributedAdjacency::matrix_bytes_for(n, h, entries, gat ? 0 : s.halo_nnz, own_symmetric,
                                                        layout, s.device);
  const int64_t width = std::max<int64_t>(1, max_exchange_width(config, widths));
  m.halo += DistributedAdjacency::exchange_bytes_for(h, s.num_send, width, config.bf16);
  if (config.bf16)  // the BF16 staging buffer
    m.halo += (n + h) * comm::HaloExchange::bf16_stride(width) * static_cast<int64_t>(sizeof(Bf16));
  return m;
}

Matrix<float> Model::activation(int l) const {
  float* workspace = const_cast<float*>(workspace_.data());
  if (l == num_layers())
    return Matrix<float>{workspace + workspace_plan_.output_at, workspace_plan_.output_rows, widths_[l], widths_[l],
                         device_};
  if (l == 0 && workspace_plan_.input_in_workspace) {
    const int64_t rows = activation_has_halo_rows(config_, widths_, 0) ? num_owned_ + num_halo_ : num_owned_;
    return Matrix<float>{workspace, rows, widths_[0], widths_[0], device_};
  }
  Tensor& x = const_cast<Tensor&>(activations_[l]);
  return x.matrix();
}

Matrix<Bf16> Model::staging() {
  const int64_t stride = comm::HaloExchange::bf16_stride(adjacency_->max_width());
  return Matrix<Bf16>{staging_.data(), num_owned_ + num_halo_, stride, stride, device_};
}

Matrix<float> Model::gradient(int l) {
  if (l + 1 == num_layers()) return grads_[l].matrix();
  float* data = workspace_.data() + workspace_plan_.gradients_at + (l % 2) * workspace_plan_.gradient_region;
  return Matrix<float>{data, num_owned_, widths_[l + 1], widths_[l + 1], device_};
}

LayerContext Model::context() {
  LayerContext ctx;
  ctx.clock = clock_.get();
  ctx.stream = stream_.get();
  return ctx;
}

LayerContext Model::forward_context(int l, int64_t epoch, bool training) {
  LayerContext ctx = context();
  ctx.keep_for_backward = training;
  if (config_.kind == ConvKind::gat && training) {
    ctx.attention = kernels::EpilogueParams{
        false, config_.attention_dropout, config_.seed,
        rng::stream_id(rng::kAttentionDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(l))};
    if (config_.gat_per_head_dropout) ctx.gat_feature_dropout = config_.dropout;
    ctx.seed = config_.seed;
    ctx.epoch = static_cast<uint32_t>(epoch);
  }
  return ctx;
}

void Model::forward(int64_t epoch, bool training) {
  // GAT with per-head dropout drops inside its layers (forward_context), not here.
  const bool layers_drop = config_.kind == ConvKind::gat && config_.gat_per_head_dropout;
  const float p = training && !layers_drop ? config_.dropout : 0.0f;
  auto stream_of = [&](int layer) {
    return rng::stream_id(rng::kDropout, static_cast<uint32_t>(epoch), static_cast<uint32_t>(layer));
  };
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream_.get());
    input_dropout(p, stream_of(0));
  }
  for (int l = 0; l < num_layers(); ++l) {
    LayerContext ctx = forward_context(l, epoch, training);
    if (layers_[l]->bf16_output()) {  // the epilogue block by block, into the BF16 X_{l+1}
      auto keep = [&](int64_t first, Matrix<float> z) { epilogue_block(l, first, z, p, stream_of(l + 1)); };
      ctx.output_block = keep;
      layers_[l]->forward(activation(l), Matrix<float>{}, ctx);
      continue;
    }
    layers_[l]->forward(activation(l), activation(l + 1), ctx);
    epilogue(l, p, stream_of(l + 1), training);
  }
  if (logits_buffer_ >= 0) propagate();
  output_valid_ = true;
}

void Model::propagate() {
  const int64_t n = num_owned_;
  const float alpha = config_.appnp_alpha;
  const kernels::Stream stream = stream_.get();
  Matrix<const float> h_own = activation(num_layers()).slice_rows(0, n);
  for (int k = 1; k <= config_.appnp_k; ++k) {
    // P_{k-1} (with halo rows, overwritten by the exchange) -> P_k's owned rows. H's own rows are untouched.
    Matrix<float> in = k == 1 ? activation(num_layers()) : propagation_[(k - 2) % 2].matrix();
    Matrix<float> out = propagation_[(k - 1) % 2].matrix().slice_rows(0, n);
    // P_{k-1} (k >= 2) is read by nothing after this product: its rows may be left scaled. H is read again.
    if (config_.bf16) {
      adjacency_->forward_rounding(in.slice_rows(0, n), staging(), out, /*scratch=*/k > 1);
    } else if (k == 1) {
      adjacency_->forward(in, out);
    } else {
      adjacency_->forward_overwriting(in, out);
    }
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::scale_add(alpha, h_own, 1.0f - alpha, out, stream);  // P_k = (1 - alpha) Â P_{k-1} + alpha H
  }
}

void Model::propagate_backward() {
  const float alpha = config_.appnp_alpha;
  const kernels::Stream stream = stream_.get();
  Matrix<float> grad_h = gradient(num_layers() - 1);  // (n, C): dLoss/dH
  {
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::scale_add(alpha, propagation_grads_[0].matrix(), 0.0f, grad_h, stream);  // alpha G_K
  }
  int current = 0;  // G_k lives in propagation_grads_[current]
  for (int k = config_.appnp_k; k >= 1; --k) {
    Matrix<float> next = propagation_grads_[1 - current].matrix();
    adjacency_->transpose_overwriting(propagation_grads_[current].matrix(), next);  // Â^T G_k (read no more)
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    kernels::scale_add(1.0f - alpha, next, 0.0f, next, stream);  // G_{k-1}
    kernels::scale_add(k > 1 ? alpha : 1.0f, next, 1.0f, grad_h, stream);
    current = 1 - current;
  }
}

void Model::epilogue(int l, float p, uint64_t rng_stream, bool training) {
  const kernels::Stream stream = stream_.get();
  PhaseScope timer(*clock_, Phase::elementwise, stream);
  Matrix<float> z = activation(l + 1).slice_rows(0, num_owned_);
  if (l + 1 == num_layers()) {
    kernels::add_bias(z, layers_[l]->bias(), stream);
    return;
  }
  const kernels::EpilogueParams params{true, p, config_.seed, rng_stream};
  if (config_.kind == ConvKind::gat) {  // bias, then ELU and dropout (Velickovic et al.; PyG's example)
    kernels::add_bias(z, layers_[l]->bias(), stream);
    kernels::elu_dropout(z, node_labels_.gids(), params,
                         training ? masks_[l + 1].matrix() : Matrix<float>{}, stream);
    return;
  }
  // No mask: the backward reads the output (kernels::relu_dropout_backward).
  kernels::bias_relu_dropout(z, layers_[l]->bias(), node_labels_.gids(),
                             params, Matrix<float>{}, stream);
}

void Model::epilogue_block(int l, int64_t first, Matrix<float> z, float p, uint64_t rng_stream) {
  const kernels::Stream stream = stream_.get();
  PhaseScope timer(*clock_, Phase::elementwise, stream);
  const Span<const int64_t> gids = node_labels_.gids();
  const kernels::EpilogueParams params{true, p, config_.seed, rng_stream};
  // The dropout decisions are keyed by the rows' global ids: the same as the whole matrix's.
  kernels::bias_relu_dropout(z, layers_[l]->bias(), Span<const int64_t>{gids.data + first, z.rows, gids.device},
                             params, Matrix<float>{}, stream);
  Matrix<Bf16> x{activations_bf16_[l + 1].data(), num_owned_, widths_[l + 1], widths_[l + 1], device_};
  kernels::convert_to_bf16(z, x.slice_rows(first, first + z.rows), stream);
}

Matrix<const float> Model::layer_output(int l) const {
  HALOGEN_ASSERT(l + 1 < num_layers() || output_valid_, "layer %d's output was overwritten by a backward", l);
  if (!keeps_bf16_activation(l + 1)) return activation(l + 1).slice_rows(0, num_owned_);
  const int64_t n = num_owned_, width = widths_[l + 1];
  if (layer_output_.size() < n * width) layer_output_ = Tensor(n, width, device_);
  Matrix<float> out{layer_output_.data(), n, width, width, device_};
  const Matrix<const Bf16> x{activations_bf16_[l + 1].data(), n, width, width, device_};
  if (n > 0) kernels::convert_from_bf16(x, out, stream_.get());
  return out;
}

void Model::input_dropout(float p, uint64_t rng_stream) {
  const int64_t n = num_owned_, f0 = widths_[0];
  Matrix<float> x0 = activation(0).slice_rows(0, n);
  const kernels::EpilogueParams params{false, p, config_.seed, rng_stream};
  const kernels::Stream stream = stream_.get();
  // No mask is recorded: layer 0 never asks for the gradient of its input.
  if (stage_input_) {  // dropped out, scaled and rounded into layer 0's staging rows: X_0 is not written
    kernels::dropout_scale_round_bf16(Matrix<const Bf16>{features_bf16_.data(), n, f0, f0, device_},
                                      node_labels_.gids(), params, adjacency_->staged_input_scale(),
                                      adjacency_->staged_input_rows(staging(), f0), stream);
    return;
  }
  if (!sparse_input_ && config_.bf16) {  // widened (exactly) and dropped out into X_0 in one pass
    kernels::dropout_bf16(Matrix<const Bf16>{features_bf16_.data(), n, f0, f0, device_}, node_labels_.gids(), params,
                          x0, stream);
    return;
  }
  if (!sparse_input_ || (p == 0.0f && !sparse_first_layer_)) {
    kernels::dropout(features_.matrix(), node_labels_.gids(), params, x0,
                     Matrix<float>{}, stream);
    return;
  }
  // The nonzeros as an (nnz, 1) matrix whose "global row id" is gid * F_0 + c: the kernel's decision for
  // (key, column 0) is that of element index key * 1 + 0 = gid * F_0 + c, the dense decision for (gid, c).
  const int64_t nnz = nonzero_values_.rows();
  kernels::dropout(nonzero_values_.matrix(), Span<const int64_t>{nonzero_key_.data(), nnz, nonzero_key_.device()},
                   params, nonzero_dropped_.matrix(), Matrix<float>{}, stream);
  if (sparse_first_layer_) {  // layer 0 reads the CSR views; the dense X_0 is not needed
    kernels::gather_rows(nonzero_dropped_.matrix(),
                         Span<const int32_t>{input_t_order_.data(), nnz, input_t_order_.device()},
                         input_t_values_.matrix(), stream);
    return;
  }
  kernels::fill(Span<float>{x0.data, n * f0, x0.device}, 0.0f, stream);
  Matrix<float> x0_flat{x0.data, n * f0, 1, 1, x0.device};
  kernels::scatter_add_rows(nonzero_dropped_.matrix(),
                            Span<const int32_t>{nonzero_position_.data(), nnz, nonzero_position_.device()}, x0_flat,
                            stream);
}

Matrix<const float> Model::logits() const {
  HALOGEN_ASSERT(output_valid_, "the logits were overwritten by a training step's backward: run infer() first");
  if (logits_buffer_ < 0) return activation(num_layers()).slice_rows(0, num_owned_);
  return propagation_[logits_buffer_].matrix().slice_rows(0, num_owned_);
}

double Model::train_step_local(int64_t epoch, float loss_scale, GradientReducer* reducer) {
  const kernels::Stream stream = stream_.get();
  store_.zero_grads(stream);
  forward(epoch, /*training=*/true);
  const int64_t n = num_owned_;
  const int last = num_layers() - 1;
  double loss_sum;
  {
    // Reads the loss on the host: the one synchronisation of the training step's forward.
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    loss_sum = node_labels_.loss(logits(), 0, loss_scale,
                                 logits_buffer_ >= 0 ? propagation_grads_[0].matrix() : gradient(last), stream);
  }
  const LayerContext ctx = context();
  output_valid_ = false;  // X_L's slot in the workspace is the backward's from here on
  if (logits_buffer_ >= 0) propagate_backward();
  if (reducer != nullptr) reducer->begin(stream);
  const bool gat = config_.kind == ConvKind::gat;
  for (int l = last; l >= 0; --l) {
    const bool want_grad_x = l > 0;
    Matrix<float> grad_x = want_grad_x ? gradient(l - 1) : Matrix<float>{};
    LayerContext layer_ctx = ctx;
    layer_ctx.bias_gradient_done = !gat && l < last;  // added below, with the epilogue's backward
    layers_[l]->backward(activation(l), gradient(l), grad_x, want_grad_x, layer_ctx);
    if (reducer != nullptr) reducer->layer_ready(l);  // layer l's weight and bias gradients are final
    if (!want_grad_x) continue;
    // The backward of layer l-1's epilogue: grad_x becomes layer l-1's grad_z and, in the same pass, gives
    // layer l-1's bias gradient (before layer l-1's backward, so before its layer_ready).
    PhaseScope timer(*clock_, Phase::elementwise, stream);
    if (gat) {
      kernels::apply_mask(grad_x, masks_[l].matrix(), stream);
    } else if (keeps_bf16_activation(l)) {  // X_l widened block by block (exactly)
      GraphConv::for_each_block(n, [&](int64_t first, int64_t rows) {
        kernels::relu_dropout_backward(grad_x.slice_rows(first, first + rows),
                                       layers_[l]->widen_input(first, rows, stream), config_.dropout,
                                       layers_[l - 1]->bias_gradient(), stream);
      });
    } else {
      kernels::relu_dropout_backward(grad_x, activations_[l].matrix().slice_rows(0, n), config_.dropout,
                                     layers_[l - 1]->bias_gradient(), stream);
    }
  }
  return loss_sum;
}

std::array<int64_t, 3> Model::evaluate_local() {
  infer();
  return node_labels_.count_correct(logits(), stream_.get());
}

double Model::evaluated_loss_local(int split) {
  return node_labels_.loss(logits(), split, 0.0f, gradient(num_layers() - 1), stream_.get());
}

int Model::first_nonfinite_layer_local(int64_t epoch) {
  forward(epoch, /*training=*/true);  // X_L shares the workspace with the backward's buffers
  for (int l = 0; l < num_layers(); ++l) {
    double sum = 0.0;
    if (keeps_bf16_activation(l + 1)) {  // BF16 keeps NaN and Inf: widened block by block
      GraphConv::for_each_block(num_owned_, [&](int64_t first, int64_t rows) {
        const Matrix<const float> z = layers_[l + 1]->widen_input(first, rows, stream_.get());
        sum += kernels::sum_squares(Span<const float>{z.data, rows * z.cols, z.device}, stream_.get());
      });
    } else {
      const Matrix<float> z = activation(l + 1);
      sum = kernels::sum_squares(Span<const float>{z.data, num_owned_ * z.cols, z.device}, stream_.get());
    }
    if (!std::isfinite(sum)) return l;
  }
  return -1;
}

}  // namespace halogen::nn
