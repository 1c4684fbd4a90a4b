#pragma once
// NodeClassification: the Workload of static graphs - a registered model (nn/model_registry.h) on the rank's shard, masked softmax
// cross-entropy over the training vertices (mean over the GLOBAL training count), one optimizer step per epoch,
// accuracy on train/valid/test. Dropout is keyed by the epoch, so P ranks reproduce one rank.
#include <array>
#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "graph/shard.h"
#include <memory>

#include "nn/model_registry.h"
#include "nn/node_model.h"
#include "train/workload.h"

namespace halogen::train {

class NodeClassification final : public Workload {
 public:
  // Builds the model from `shard` (features row-normalised beforehand by the caller if wanted). Collective
  // (global split sizes); UserError on every rank when the graph has no training vertex.
  NodeClassification(comm::Communicator& comm, const graph::Shard& shard, const nn::ModelConfig& config,
                     Device device);
  // The same, emptying the shard's adjacency and features once the model holds them (nn::Model's Shard&&).
  NodeClassification(comm::Communicator& comm, graph::Shard&& shard, const nn::ModelConfig& config, Device device);

  const char* model_name() const override;
  const char* task_name() const override { return "node-classification"; }
  std::string fingerprint() const override;
  // model, layers, hidden, dropout, seed.
  RunOptions options() const override;
  uint64_t seed() const override { return model_->config().seed; }
  nn::ParameterStore& parameters() override { return model_->parameters(); }
  nn::PhaseClock& clock() override { return model_->clock(); }
  kernels::Stream stream() const override { return model_->stream(); }
  Device device() const override { return model_->device(); }

  // The model's own split of weight decay where it has one (ModelSpec::weight_decay).
  std::vector<float> weight_decay_per_layer(int parameter_layers, float weight_decay, bool all_layers) const override;
  int64_t steps_per_epoch() const override { return 1; }
  double step_local(int64_t epoch, int64_t step, nn::GradientReducer& reducer) override;
  double loss_denominator() const override { return static_cast<double>(global_split_sizes_[0]); }
  std::string diagnose_nonfinite_loss() override;
  Metrics evaluate() override;
  void warm_up(int64_t epoch) override;
  int64_t estimated_bytes() const override { return estimated_bytes_; }
  Metrics memory_plan() const override;

  nn::NodeModel& model() { return *model_; }

 private:
  // Both constructors: `release` is nullptr or the shard, emptied by the model.
  NodeClassification(comm::Communicator& comm, const graph::Shard& shard, graph::Shard* release,
                     const nn::ModelConfig& config, Device device);

  comm::Communicator& comm_;
  nn::RankShape shape_;  // the shard's (shard_rank_shape_without_features), taken before the model empties it
  const nn::ModelSpec& spec_;
  std::unique_ptr<nn::NodeModel> model_;
  int64_t last_epoch_ = 0;
  int64_t step_halo_bytes_ = 0;  // this rank's halo bytes sent by the last training step  // of the last training step (diagnose_nonfinite_loss runs its forward again)
  std::array<int64_t, 3> global_split_sizes_{};
  int64_t num_features_ = 0, num_classes_ = 0;
  int64_t estimated_bytes_ = 0;
  nn::MemoryBreakdown memory_plan_;
};

}  // namespace halogen::train
