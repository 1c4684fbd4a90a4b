#pragma once
// Model: a stack of GraphConv layers (GCN, GraphSAGE-mean, GIN, or APPNP's MLP) on one rank, with every
// activation, mask and gradient buffer allocated once at construction (none in the training loop).
//
//   X_0 = dropout(features)                                   dropout stream (epoch, 0)
//   Z_l = conv_l(X_l)               l = 0 .. L-1              (graph_conv.h; the halo exchange inside)
//   X_{l+1} = dropout(relu(Z_l + b_l))   for l < L-1          dropout stream (epoch, l+1), in place on Z_l
//   logits = Z_{L-1} + b_{L-1}
// APPNP (Klicpera et al.): the layers are the MLP's linear layers (no graph), H = Z_{L-1} + b_{L-1}, then K
// propagation steps with teleport alpha, one halo exchange each (Â: GCN-normalised, self-loops):
//   P_0 = H,  P_k = (1 - alpha) Â P_{k-1} + alpha H  (k = 1 .. K),  logits = P_K.
// Its backward runs the K steps in reverse with Â^T (the reverse exchange):
//   G_K = dLoss/dP_K,  G_{k-1} = (1 - alpha) Â^T G_k,  dLoss/dH = G_0 + alpha (G_1 + ... + G_K).
//
// GAT (nn/gat_conv.h): hidden layers are multi-head attention with concatenated heads, then bias, ELU and
// dropout (mask = dropout factor times elu'); the last layer averages its heads. With gat_per_head_dropout
// (the default) the layers drop their own inputs, a mask per head, and their transformed features, and the
// model's input dropout and the dropout after ELU are off (the ELU mask is elu' alone). The layers share one
// AttentionGraph (the rank's edges plus self-loops); the adjacency holds no matrix (GAT multiplies by
// attention weights), only the halo exchange. Attention dropout is keyed by (seed, epoch, layer, head group)
// and the edge's global (destination, source) ids.
//
// Edge weights (config.edge_weight): the shard's stored weights enter the adjacency (graph/local_graph.h,
// "Weighted"); the halo vertices' weighted degrees come from their owners in one exchange at construction.
// Dropout decisions are keyed by (seed, epoch, layer, global vertex id, column) and weights are initialised
// from (seed, tensor index, element), so P ranks compute what one rank computes, up to summation order.
//
// Evaluation runs the same forward with dropout off, in the same buffers: it allocates nothing.
//
// Buffers by lifetime (Model::workspace_plan): one workspace, planned at construction, holds what lives inside
// one phase of a training step: the layers' forward scratch, X_0 (when only layer 0's forward reads it) and the
// last layer's output X_L (read by the loss or APPNP's propagation, never by the backward) during the forward;
// during the backward, the layers' backward scratch at its start, then the hidden layers' dLoss/dZ_l (l < L-1)
// in two regions used in turn (dZ_l lives from layer l+1's backward to layer l's). Kept apart: the activations
// X_1 .. X_{L-1} (read by the backward; under --precision bf16 those that keeps_bf16_activation names live in
// BF16 alone, formed and read through a few blocks of rows), the last layer's dLoss/dZ (written by the loss).
//
// Loss: masked softmax cross-entropy over the rank's training rows, gradients scaled by the caller's
// `loss_scale` (= 1 / global training count); the caller sums the returned local loss over ranks, and the
// gradients with a GradientReducer passed to train_step_local (bucketed allreduce overlapped with the
// backward).
//
// Device: every buffer lives on `device`; all work is enqueued on one compute stream made here (stream();
// nullptr on the CPU) and timed per phase by clock() (nn/profile.h). Results the host needs (the loss,
// correct counts, NaN checks) come back as host scalars from kernels that synchronise the stream; nothing
// indexes a buffer on the host after construction.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/compute_stream.h"
#include "nn/attention_graph.h"
#include "nn/gradient_reducer.h"
#include "nn/distributed_adjacency.h"
#include "nn/graph_conv.h"
#include "nn/node_labels.h"
#include "nn/node_model.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

// A model option's value (nn/model_registry.h): integer, real, flag or choice.
using OptionValue = std::variant<int64_t, float, bool, std::string>;

struct ModelConfig {
  // The registered model (nn/model_registry.h); empty: the layer stack of `kind` (conv_kind_name(kind)).
  std::string name;
  ConvKind kind = ConvKind::gcn;  // the layer stack's layer kind (nn::Model); set by the spec that builds it
  int layers = 2;
  int64_t hidden = 16;  // hidden width; gin: also the width of every layer's MLP
  float dropout = 0.5f;
  uint64_t seed = 0;
  bool overlap = true;
  int appnp_k = 10;            // appnp: propagation steps K (>= 0)
  float appnp_alpha = 0.1f;    // appnp: teleport probability, in [0, 1]
  bool gin_learn_eps = false;  // gin: a learnable epsilon per layer ("layer<l>.eps"); else eps = 0
  bool edge_weight = false;    // use the graph's edge weights (the shard must have them)
  int gat_heads = 8;               // gat: heads of every hidden layer (concatenated; --hidden is the width per head)
  int gat_output_heads = 1;        // gat: heads of the output layer (averaged)
  float attention_dropout = 0.6f;  // gat: dropout on the attention coefficients, in [0, 1)
  // gat: where `dropout` applies. true (--gat-dropout original, Velickovic et al.'s reference implementation):
  // inside each layer, an independent mask on the layer's input per head and one on its transformed features
  // (nn/gat_conv.h); false (--gat-dropout pyg, PyG's GATConv example): on the model's input and after each
  // hidden layer's ELU, one mask shared by the heads. Evaluation is the same.
  bool gat_per_head_dropout = true;
  // --recompute: hidden layers that aggregate first (GCN, SAGE, GIN; F_{l+1} >= F_l, l >= 1) keep no Â X_l
  // for the backward, which recomputes it (one local SpMM per such layer, no exchange; results bitwise equal;
  // GraphConv::set_recompute_aggregate). Layer 0 keeps Â X_0: its input X_0 lives in the workspace, and keeping
  // X_0 instead would cost as much.
  bool recompute = false;
  // --precision bf16: dense features are stored in BF16, and every matrix multiplied by the adjacency (a
  // layer's X or X W, APPNP's P_k; GAT: H and its source scores, nn/gat_conv.h) is rounded to BF16 into one
  // staging buffer ((n_own + n_halo) x bf16_stride(widest)) before the product: the halo exchange moves BF16
  // rows, and so do the reverse exchange's partial sums (half the bytes each way), and the SpMM gathers BF16
  // rows (half the memory traffic; GAT widens the received rows into its FP32 buffer instead), widening them
  // exactly and accumulating in FP32. The FP32 activations then need no halo rows. A GCN, SAGE or GIN layer
  // that aggregates first keeps its Â X for the backward in BF16 (keeps_bf16_aggregate). Parameters, gradients,
  // optimizer state, the dense products (BLAS), the layers' outputs X_l and the loss stay FP32.
  // --recompute has no effect (the staging buffer does not keep a layer's halo rows until its backward).
  bool bf16 = false;
  // The options of a model that has no field here (a model added in its own file), by option name.
  std::map<std::string, OptionValue> values;
};

// The --precision name: "bf16" or "fp32".
inline const char* precision_name(bool bf16) { return bf16 ? "bf16" : "fp32"; }

// The --gat-dropout name of a placement: "original" (per-head) or "pyg".
inline const char* gat_dropout_name(bool per_head_dropout) { return per_head_dropout ? "original" : "pyg"; }

// Sizes that determine a rank's memory (memory estimates without building anything).
struct RankShape {
  int64_t num_owned = 0, num_halo = 0, nnz = 0, num_send = 0;
  int64_t num_features = 0, num_classes = 0, num_split_rows = 0;
  int64_t sparse_feature_nonzeros = 0;  // nonzeros when the features take the sparse input path, else 0
  int64_t halo_nnz = 0;                 // stored entries whose column is a halo vertex (nnz(A_halo))
  bool own_symmetric = false;           // A_own stored once (graph::LocalGraph::a_own_symmetric; predicted
                                        // as "the graph is undirected" before the model is built)
  Device device = Device::cpu;          // where the model lives (the CPU keeps implicit adjacency values as
                                        // factors, the GPU stores them: nn/sparse_adjacency.h)
};

// A rank's planned Buffers by what holds them (bytes; Model::estimate_breakdown, `halogen info DIR --hidden`):
struct MemoryBreakdown {
  int64_t structure = 0;    // the adjacency: A_own, A_halo and their transposes (GAT: its attention graph)
  int64_t halo = 0;         // the halo exchange's send and receive buffers, the reverse exchange's partial sums
  int64_t features = 0;     // features (and their sparse path), global ids, labels, split rows
  int64_t activations = 0;  // kept from the forward for the backward: layer outputs, Â X / T / h, GAT's
                            // attention and masks, APPNP's propagation, X_0 unless in the workspace
  int64_t gradients = 0;    // dLoss/dZ of the last layer (APPNP: and of its propagation)
  int64_t workspace = 0;    // the layers' shared forward/backward scratch, the hidden layers' dLoss/dZ, and X_0
                            // where it fits there (Model::workspace_plan)
  int64_t parameters = 0;   // parameters and their gradients
  int64_t optimizer = 0;    // Adam's m and v (estimate_rank_memory adds it)
  int64_t total() const {
    return structure + halo + features + activations + gradients + workspace + parameters + optimizer;
  }
  // (name, bytes) in the order above, the names as the fields above ("structure", ...).
  std::vector<std::pair<const char*, int64_t>> items() const {
    return {{"structure", structure},     {"halo", halo},         {"features", features},
            {"activations", activations}, {"gradients", gradients}, {"workspace", workspace},
            {"parameters", parameters},   {"optimizer", optimizer}};
  }
};

class Model final : public NodeModel {
 public:
  // Copies what it needs from `shard` (features, labels, splits, global ids, the normalised adjacency and the
  // halo plan) to `device`. Labels < 0 are dropped from the splits. The shard may be freed afterwards.
  Model(const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard, Device device)
      : Model(config, comm, shard, nullptr, device) {}
  // The same, emptying the shard's adjacency arrays (indptr, indices, weight, degrees) once the adjacency is
  // built and its features once copied, so that the process never holds a second copy of either beside the
  // model's (the peak memory of `halogen train`). Its labels, splits, ids and halo plan stay.
  Model(const ModelConfig& config, comm::Communicator& comm, graph::Shard&& shard, Device device)
      : Model(config, comm, shard, &shard, device) {}

  // Forward (dropout on, keyed by `epoch`), loss, backward. Gradients "=" (zeroed first). Without a reducer
  // they are NOT summed over ranks. With one (built on parameters()), the backward calls reducer->begin(),
  // then reducer->layer_ready(l) right after layer l's backward, so each bucket's allreduce overlaps the
  // backward of the layers below it; the caller calls reducer->finish() before reading the summed gradients.
  // Returns this rank's sum of per-vertex losses over its training rows.
  double train_step_local(int64_t epoch, float loss_scale, GradientReducer* reducer = nullptr) override;
  // Forward with dropout off; correct predictions on this rank for train, valid, test.
  std::array<int64_t, 3> evaluate_local() override;
  // Inference (`halogen predict`): the forward with dropout off, exactly as evaluate_local() runs it
  // (collective: the halo exchanges). Afterwards layer_output(l) holds layer l's output on the owned rows.
  void infer() override { forward(/*epoch=*/0, /*training=*/false); }
  // (n_own, F_{l+1}), contiguous: relu(Z_l + b_l) for a hidden layer l, the logits for the last (= logits()).
  // (The last layer's lives in the workspace: valid until the next training step's backward.)
  // (A hidden output kept in BF16, keeps_bf16_activation, is widened into a buffer allocated on the first call.)
  Matrix<const float> layer_output(int l) const override;
  // After evaluate_local(): this rank's sum of softmax cross-entropy over split `split`'s rows (0 train, 1
  // valid, 2 test) for the logits that evaluation computed (dropout off). Uses the last layer's gradient
  // buffer as scratch (every training step overwrites it before reading it), so it changes nothing training
  // reads.
  double evaluated_loss_local(int split) override;
  // This rank's number of (labelled) train, valid, test vertices.
  std::array<int64_t, 3> split_sizes_local() const override { return node_labels_.split_sizes; }

  // The first layer (0-based) whose output on this rank holds a NaN/Inf in training step `epoch`'s forward,
  // else -1. Runs that forward again (dropout keyed by the epoch: the same outputs; collective), before the
  // optimizer changes the parameters: the last layer's output does not outlive the backward.
  int first_nonfinite_layer_local(int64_t epoch) override;
  // (The parameters' check is ParameterStore::first_nonfinite_layer.)

  // Nonzero features held for the sparse input-dropout path (0 when the features are dense).
  int64_t sparse_input_nonzeros() const override { return sparse_input_ ? nonzero_values_.rows() : 0; }
  // Whether features with `nonzeros` nonzero values in an (n, f) matrix take the sparse input path
  // (density <= 25% with at least one nonzero, and n*f small enough for 32-bit positions). Also used by
  // `halogen info` to predict memory.
  static bool uses_sparse_input(int64_t nonzeros, int64_t n, int64_t f);
  // Whether layer 0 takes the sparse input (CSR views) when the features are sparse enough, beyond the
  // transform-first layers: GAT with per-head dropout.
  static bool gat_sparse_first_layer(const ModelConfig& config);
  ParameterStore& parameters() override { return store_; }
  bool own_symmetric() const override { return adjacency_->own_symmetric(); }
  comm::HaloExchange& halo() { return adjacency_->exchange(); }
  int64_t halo_bytes_sent() const override { return adjacency_->exchange().stats().bytes_sent; }
  DistributedAdjacency& adjacency() { return *adjacency_; }
  // Phase timing of the work enqueued by this model (and by callers that pass it the phase), see nn/profile.h.
  PhaseClock& clock() override { return *clock_; }
  // The compute stream every op of this model runs on (nullptr on the CPU).
  kernels::Stream stream() const override { return stream_.get(); }
  Device device() const override { return device_; }
  int num_layers() const override { return static_cast<int>(layers_.size()); }
  const GraphConv& layer(int l) const { return *layers_[l]; }
  const ModelConfig& config() const override { return config_; }
  void set_overlap(bool overlap) override {
    config_.overlap = overlap;
    adjacency_->set_overlap(overlap);
  }
  // Logits of the owned rows after the last forward: (n_own, num_classes).
  Matrix<const float> logits() const override;

  // Bytes of Buffers a Model of this shape allocates (including its HaloExchange and parameters, excluding
  // optimizer state: add 2 * num_parameters * 4 for Adam).
  static int64_t estimate_bytes(const ModelConfig& config, const RankShape& shape) {
    return estimate_breakdown(config, shape).total();
  }
  // The same by what holds it (optimizer 0).
  static MemoryBreakdown estimate_breakdown(const ModelConfig& config, const RankShape& shape);
  // The layers' shared workspace: its floats, and whether X_0 lives in it (layer 0 aggregates first and its
  // backward does not read X_0: GraphConv::backward_reads_input).
  struct WorkspacePlan {
    int64_t floats = 0;
    bool input_in_workspace = false;
    // Hidden layer l's dLoss/dZ_l (n_own, F_{l+1}), l = 0 .. L-2, starts at float gradients_at + (l % 2) *
    // gradient_region: after every layer's backward scratch, the regions of consecutive layers apart.
    int64_t gradients_at = 0, gradient_region = 0;
    // X_L (output_rows, F_L) starts at float output_at: after the last layer's forward scratch (and after X_0
    // for a one-layer model).
    int64_t output_at = 0, output_rows = 0;
  };
  // dense_input: the features take the dense input path (not uses_sparse_input).
  static WorkspacePlan workspace_plan(const ModelConfig& config, const std::vector<int64_t>& widths,
                                      int64_t num_owned, int64_t num_halo, bool dense_input);
  // bf16: layer 0 takes its input staged in BF16 (GraphConv::set_input_staged): a GCN that aggregates first, on
  // dense features. X_0 is then never formed in FP32.
  static bool stages_input(const ModelConfig& config, const std::vector<int64_t>& widths, bool dense_input);
  // bf16: layer l keeps its Â X for the backward in BF16 (GraphConv::set_bf16_aggregate): a GCN, SAGE or GIN
  // layer that aggregates first, except a layer 0 whose FP32 X_0 lives in the workspace (not staged).
  static bool keeps_bf16_aggregate(const ModelConfig& config, const std::vector<int64_t>& widths, int l,
                                   bool dense_input);
  // bf16: X_l (a hidden layer's output, l = 1 .. L-1) is kept in BF16 alone (GraphConv::set_bf16_output on layer
  // l-1, set_bf16_input on layer l): GCN and SAGE when layer l-1 aggregates first, GIN, and APPNP's MLP (but for
  // X_1 on sparse features): layer l-1's Z is formed block by block, so no (n_own, F_l) FP32 matrix is ever held.
  // The layers that read X_l widen it block by block.
  static bool keeps_bf16_activation(const ModelConfig& config, const std::vector<int64_t>& widths, int l,
                                    bool dense_input);
  // The floats of the blocks those layers (and the model's relu backward) widen into (GraphConv::block_floats).
  static int64_t bf16_block_floats(const ModelConfig& config, const std::vector<int64_t>& widths, int64_t num_owned,
                                   bool dense_input);
  // Whether X_l (l = 0 .. L) needs the halo rows: it is exchanged (the input of a GCN, SAGE or GIN layer that
  // aggregates first, or APPNP's H = X_L with K > 0). Otherwise only its owned rows are allocated.
  static bool activation_has_halo_rows(const ModelConfig& config, const std::vector<int64_t>& widths, int l);
  static std::vector<int64_t> layer_widths(const ModelConfig& config, int64_t num_features, int64_t num_classes);
  // Trainable floats of a model of this shape.
  static int64_t parameter_count(const ModelConfig& config, int64_t num_features, int64_t num_classes);

 private:
  // `release`: nullptr, or the shard itself, whose arrays are emptied once they are copied.
  Model(const ModelConfig& config, comm::Communicator& comm, const graph::Shard& shard, graph::Shard* release,
        Device device);
  // Construction, in this order.
  void check_inputs(const graph::Shard& shard) const;
  void build_layers(const graph::Shard& shard);  // layers, parameters, adjacency, halo exchange
  // The weighted degrees of the shard's owned and halo vertices (one exchange of the owned ones, collective).
  graph::EdgeWeighting exchange_weighted_degrees(const graph::Shard& shard);
  void copy_features(const graph::Shard& shard);  // dense features, and the sparse input path when it applies
  void copy_and_release_features(const graph::Shard& shard, graph::Shard* release_shard);
  void build_sparse_first_layer(const std::vector<int32_t>& positions, int64_t f0);
  void allocate_activations();  // activations, masks, gradients, the evaluation's input aggregate
  // APPNP's K propagation steps on H = the last activation (forward) and their reverse (backward: G_K in
  // propagation_grads_[0] -> dLoss/dH in grads_.back()).
  void propagate();
  void propagate_backward();

  void forward(int64_t epoch, bool training);
  void input_dropout(float p, uint64_t rng_stream);
  // Bias, then relu and dropout (keyed by `rng_stream`) for hidden layers, on layer l's output; the mask only
  // when training.
  void epilogue(int l, float p, uint64_t rng_stream, bool training);
  // The same epilogue on rows [first, first + z.rows) of layer l's output Z, then rounded into the BF16 X_{l+1}
  // (keeps_bf16_activation(l + 1): LayerContext::output_block).
  void epilogue_block(int l, int64_t first, Matrix<float> z, float p, uint64_t rng_stream);
  bool keeps_bf16_activation(int l) const { return keeps_bf16_activation(config_, widths_, l, !sparse_input_); }
  LayerContext context();
  // X_l (n_own + n_halo, F_l; only the owned rows where activation_has_halo_rows is false): activations_[l],
  // or a view of the workspace for X_L, and for X_0 when it lives there.
  Matrix<float> activation(int l) const;
  // The BF16 staging buffer (n_own + n_halo, bf16_stride(the adjacency's max width)); bf16 only.
  Matrix<Bf16> staging();
  // dLoss/dZ_l (n_own, F_{l+1}): grads_[l] for the last layer, a view of the workspace for the others.
  Matrix<float> gradient(int l);
  // The context of layer l's forward: gat's attention dropout keyed by (epoch, l) when training.
  LayerContext forward_context(int l, int64_t epoch, bool training);

  ModelConfig config_;
  comm::Communicator& comm_;
  Device device_;
  ComputeStream stream_;
  std::unique_ptr<PhaseClock> clock_;
  int64_t num_owned_ = 0, num_halo_ = 0;
  std::vector<int64_t> widths_;  // F_0 .. F_L
  ParameterStore store_;
  std::vector<std::unique_ptr<GraphConv>> layers_;
  std::unique_ptr<DistributedAdjacency> adjacency_;  // Â (or M) with the shard's halo plan, shared by the layers
  std::unique_ptr<AttentionGraph> attention_graph_;  // gat only

  Tensor features_;                 // (n_own, F_0); empty under bf16 with dense features
  Buffer<Bf16> features_bf16_;      // (n_own, F_0) under bf16 with dense features (the sparse path keeps FP32)
  // bf16: the matrix each adjacency product multiplies, rounded to BF16, with the halo rows the exchange brings:
  // (n_own + n_halo) x bf16_stride(max exchange width) (ModelConfig::bf16).
  Buffer<Bf16> staging_;
  // Sparse input features (density <= kSparseInputDensity): input dropout draws only for the nonzeros, which
  // gives exactly the dense result (a dropped or kept zero is zero) at a fraction of the RNG cost. Entry i is
  // feature (r, c): value, key gid*F_0 + c (the dense dropout index), position r*F_0 + c in X_0.
  bool sparse_input_ = false;
  Tensor nonzero_values_, nonzero_dropped_;               // (nnz, 1)
  Buffer<int64_t> nonzero_key_;                            // (nnz)
  Buffer<int32_t> nonzero_position_;                       // (nnz)
  // When layer 0 transforms first, it multiplies the sparse X_0 directly (spmm instead of gemm) and the dense
  // X_0 is never formed: X_0 as CSR (row pointers, columns; values = nonzero_dropped_) and its transpose
  // (values gathered from nonzero_dropped_ through transpose_order each forward).
  bool sparse_first_layer_ = false;
  Buffer<int64_t> input_indptr_, input_t_indptr_;          // (n+1), (F_0+1)
  Buffer<int32_t> input_columns_, input_t_rows_, input_t_order_;  // (nnz) each
  Tensor input_t_values_;                                  // (nnz, 1)
  NodeLabels node_labels_;          // global ids, labels, split rows (nn/node_labels.h)
  // The layers' forward/backward scratch (GraphConv::ScratchPlan), shared by all of them, the hidden layers'
  // gradients, and X_0 when input_in_workspace_ (it is read by layer 0's forward alone): workspace_plan.
  Tensor workspace_;
  WorkspacePlan workspace_plan_;
  // bf16: layer 0 takes its input staged in BF16 (GraphConv::set_input_staged), written by input_dropout.
  bool stage_input_ = false;
  std::vector<Tensor> activations_;  // X_0 .. X_L (activation(l)); X_L (in the workspace) and X_0 when
                                     // input_in_workspace are empty
  // keeps_bf16_activation: X_l (n_own, F_l) in BF16 (activations_[l] is then empty); empty for the others.
  std::vector<Buffer<Bf16>> activations_bf16_;
  Tensor blocks_;  // bf16_block_floats: the rows the layers and the relu backward widen BF16 activations into
  mutable Tensor layer_output_;  // layer_output's widened copy of a BF16 hidden output (predict)
  std::vector<Tensor> masks_;        // mask_l (n_own, F_l) for l = 1 .. L-1 (input of layer l); masks_[0] empty
  std::vector<Tensor> grads_;        // dLoss/dZ_l (n_own, F_{l+1}) for l = L-1; empty for l < L-1 (gradient(l))
  // APPNP: P_k in turn (n_own + n_halo, C) x 2 and G_k in turn (n_own, C) x 2; logits_ points at P_K's owned
  // rows (the last activation's without APPNP, or with K = 0).
  std::array<Tensor, 2> propagation_, propagation_grads_;
  int logits_buffer_ = -1;  // -1: X_L; else propagation_[logits_buffer_]
  bool output_valid_ = false;  // X_L (in the workspace) holds the last forward's output: no backward since
};

}  // namespace halogen::nn
