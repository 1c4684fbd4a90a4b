#include "train/node_classification.h"

#include "core/error.h"
#include "core/format.h"
#include "train/collective_error.h"
#include "train/memory_estimate.h"

namespace halogen::train {

NodeClassification::NodeClassification(comm::Communicator& comm, const graph::Shard& shard,
                                       const nn::ModelConfig& config, Device device)
    : NodeClassification(comm, shard, nullptr, config, device) {}

NodeClassification::NodeClassification(comm::Communicator& comm, graph::Shard&& shard, const nn::ModelConfig& config,
                                       Device device)
    : NodeClassification(comm, shard, &shard, config, device) {}

namespace {

// A fingerprint's text of an option value: integers and choices as they are, reals by %g, flags as 0/1 (the
// text earlier checkpoints hold).
std::string fingerprint_text(const nn::OptionValue& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "1" : "0";
  if (const auto* f = std::get_if<float>(&value)) return strformat("%g", static_cast<double>(*f));
  return nn::option_text(value);
}

void add_option_value(RunOptions& options, const std::string& key, const nn::OptionValue& value) {
  std::visit([&](const auto& v) { add_option(options, key, v); }, value);
}

}  // namespace

NodeClassification::NodeClassification(comm::Communicator& comm, const graph::Shard& shard, graph::Shard* release,
                                       const nn::ModelConfig& config, Device device)
    : comm_(comm), shape_(shard_rank_shape_without_features(shard)),
      spec_(nn::model_spec(config)), model_(spec_.build(config, comm, shard, release, device)), num_features_(shard.num_features),
      num_classes_(shard.num_classes) {
  const std::array<int64_t, 3> local = model_->split_sizes_local();
  global_split_sizes_ = local;
  comm_.allreduce_sum(global_split_sizes_.data(), 3);
  if (global_split_sizes_[0] == 0) {
    // Why (a graph file written by another tool, issue 31): float labels, or a split of unlabelled vertices.
    int64_t why[2] = {static_cast<int64_t>(shard.train.size()),
                      shard.labels.empty() && !shard.targets.empty() ? 1 : 0};
    comm_.allreduce_sum(why, 2);
    // Known to every rank: the message once, on rank 0.
    if (comm_.rank() == 0) {
      if (why[1] > 0)
        throw UserError("/node/label is float, which a graph file means as regression targets; node classification "
                        "needs int32 class ids (-1 = unlabelled): write them as int32 (numpy: labels.astype('int32'))");
      if (why[0] > 0)
        throw UserError(strformat("/split/train lists %lld vertices, but none of them has a label (/node/label is -1 "
                                  "for every one)",
                                  static_cast<long long>(why[0])));
      throw UserError("the graph has no labelled training vertices (/split/train is empty)");
    }
    throw PeerFailed();
  }
  // The shard's shape as the model was built: its split rows without the unlabelled ones it dropped, the
  // nonzeros of the sparse input path it chose and whether its A_own is stored once (no second scan of the
  // features or the adjacency).
  nn::RankShape shape = shape_;
  shape.num_split_rows = local[0] + local[1] + local[2];
  shape.sparse_feature_nonzeros = model_->sparse_input_nonzeros();
  shape.own_symmetric = model_->own_symmetric();
  shape.device = model_->device();
  memory_plan_ = estimate_rank_breakdown(config, shape);
  estimated_bytes_ = memory_plan_.total();
}

Metrics NodeClassification::memory_plan() const {
  Metrics plan;
  for (const auto& [name, bytes] : memory_plan_.items()) plan[name] = static_cast<double>(bytes);
  return plan;
}

const char* NodeClassification::model_name() const {
  return spec_.name.c_str();
}

std::string NodeClassification::fingerprint() const {
  const nn::ModelConfig& m = model_->config();
  std::string text = strformat("model=%s layers=%d hidden=%lld features=%lld classes=%lld seed=%llu",
                               model_name(), m.layers, (long long)m.hidden, (long long)num_features_,
                               (long long)num_classes_, (unsigned long long)m.seed);
  // Options that change the function computed but not the parameter shapes (gcn/sage without weights: nothing
  // added, so their earlier checkpoints still match): the model's own options (nn/model_registry.h).
  for (const nn::ModelOption& option : spec_.options)
    text += " " + option.key + "=" + fingerprint_text(option.get(m));
  if (m.edge_weight) text += " edge_weight=1";
  return text;
}

RunOptions NodeClassification::options() const {
  const nn::ModelConfig& m = model_->config();
  RunOptions options;
  add_option(options, "model", model_name());
  add_option(options, "layers", m.layers);
  add_option(options, "hidden", m.hidden);
  add_option(options, "dropout", m.dropout);
  add_option(options, "seed", m.seed);
  // As in the fingerprint: only where they change the function, so gcn/sage checkpoints keep their options.
  for (const nn::ModelOption& option : spec_.options) add_option_value(options, option.key, option.get(m));
  if (m.edge_weight) add_option(options, "edge_weight", m.edge_weight);
  if (m.bf16) add_option(options, "precision", std::string(nn::precision_name(m.bf16)));
  return options;
}

std::vector<float> NodeClassification::weight_decay_per_layer(int parameter_layers, float weight_decay,
                                                              bool all_layers) const {
  if (spec_.weight_decay) return spec_.weight_decay(model_->config(), parameter_layers, weight_decay, all_layers);
  return Workload::weight_decay_per_layer(parameter_layers, weight_decay, all_layers);
}

double NodeClassification::step_local(int64_t epoch, int64_t step, nn::GradientReducer& reducer) {
  (void)step;
  last_epoch_ = epoch;
  const int64_t before = model_->halo_bytes_sent();
  const double loss = model_->train_step_local(epoch, static_cast<float>(1.0 / loss_denominator()), &reducer);
  step_halo_bytes_ = model_->halo_bytes_sent() - before;
  return loss;
}

std::string NodeClassification::diagnose_nonfinite_loss() {
  double first_bad = model_->first_nonfinite_layer_local(last_epoch_);
  if (first_bad < 0) first_bad = 1e9;
  first_bad = -first_bad;  // max of the negated = min over ranks
  comm_.allreduce_max(&first_bad, 1);
  const int layer = static_cast<int>(-first_bad);
  if (layer < model_->num_layers()) return strformat("first non-finite values in the output of layer %d", layer);
  return "layer outputs are finite: the softmax overflowed";
}

Metrics NodeClassification::evaluate() {
  const std::array<int64_t, 3> correct_local = model_->evaluate_local();
  int64_t correct[3] = {correct_local[0], correct_local[1], correct_local[2]};
  comm_.allreduce_sum(correct, 3);
  double sums[2] = {model_->evaluated_loss_local(1), static_cast<double>(step_halo_bytes_)};
  comm_.allreduce_sum(sums, 2);
  const double valid_loss = sums[0];
  auto ratio = [&](int s) {
    return global_split_sizes_[s] > 0
               ? static_cast<double>(correct[s]) / static_cast<double>(global_split_sizes_[s])
               : 0.0;
  };
  Metrics metrics{{"train_acc", ratio(0)}, {"valid_acc", ratio(1)}, {"test_acc", ratio(2)}};
  // Bytes every rank's halo exchanges sent in the last training step (forward and backward; half under
  // --precision bf16); 0 before the first step.
  metrics["halo_bytes"] = sums[1];
  // Mean cross-entropy over the validation vertices, dropout off (no figure without a validation split).
  if (global_split_sizes_[1] > 0)
    metrics["valid_loss"] = valid_loss / static_cast<double>(global_split_sizes_[1]);
  return metrics;
}

void NodeClassification::warm_up(int64_t epoch) {
  // The GPU SpMM makes its cuSPARSE descriptors, workspaces and index copies (Buffers) on the first product of
  // each matrix and width (kernels/cuda/spmm.cu): one training step without an update makes them here. It
  // changes no state the epochs read: parameters and Adam are untouched, gradients are zeroed by every step,
  // dropout is keyed by the epoch. One evaluation (collective, like every evaluation) makes those of the
  // products that only evaluation runs: a sparse first layer's undropped features (GAT, GCN), which the first
  // H200 run caught growing the buffers inside epoch 1.
  if (model_->device() != Device::cuda) return;
  model_->train_step_local(epoch, static_cast<float>(1.0 / loss_denominator()));
  evaluate();
}

}  // namespace halogen::train
