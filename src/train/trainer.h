#pragma once
// Trainer: full-batch training of a Model on one rank of P (every rank runs the same loop; all calls are
// collective). One epoch = forward (dropout keyed by the epoch) -> loss -> backward with the halo exchanges,
// each layer's gradient allreduce started as soon as its backward ends (nn::GradientReducer, one bucket per
// layer) -> wait for the buckets -> Adam. Evaluation (dropout off, through the same halo path)
// every `eval_every` epochs; best-valid tracking; early stopping; checkpoints; metrics.
//
// Errors: a NaN/Inf loss or parameter stops training on every rank (UserError on rank 0 naming the epoch and
// the layer, PeerFailed elsewhere); the decision is taken from allreduced values, so all ranks agree.
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "nn/adam.h"
#include "nn/model.h"

namespace halogen::train {

struct TrainConfig {
  nn::ModelConfig model;
  int64_t epochs = 200;
  float lr = 0.01f;
  float weight_decay = 5e-4f;       // L2 on the FIRST layer's parameters (Kipf & Welling)...
  bool weight_decay_all_layers = false;  // ...or on every layer
  int64_t eval_every = 1;
  int64_t patience = 0;             // stop after this many evaluations without a better valid accuracy; 0 = off
  std::string metrics_path;         // JSON lines (rank 0); empty = none
  std::string checkpoint_dir;       // empty = no checkpoints
  int64_t checkpoint_every = 0;     // epochs between checkpoints; 0 = only at the end
  bool resume = false;              // continue from checkpoint_dir
  bool print_epochs = true;         // rank 0 prints one line per evaluated epoch
  Device device = Device::cpu;
};

struct EpochRecord {
  int64_t epoch = 0;
  double loss = 0;
  bool evaluated = false;
  double train_acc = 0, valid_acc = 0, test_acc = 0;
  // Max over ranks, milliseconds. epoch = the training step (eval excluded); allreduce = gradient allreduce
  // in flight (first bucket's start to the last one's end) + the loss allreduce, allreduce_exposed = the part
  // the backward did not hide; other = epoch - spmm - gemm - halo_exposed - allreduce_exposed.
  double epoch_ms = 0, spmm_ms = 0, gemm_ms = 0, halo_ms = 0, halo_exposed_ms = 0, allreduce_ms = 0,
         allreduce_exposed_ms = 0, other_ms = 0, eval_ms = 0;
};

struct TrainResult {
  std::vector<EpochRecord> epochs;  // the epochs this run executed
  int64_t best_epoch = 0;
  double best_valid_acc = 0, test_acc_at_best = 0, train_acc_at_best = 0;
  double mean_epoch_ms = 0;
  int64_t last_epoch = 0;
  bool stopped_early = false;
  int64_t allocated_bytes = 0;   // max over ranks of Buffer bytes held during training
  int64_t estimated_bytes = 0;   // this rank's estimate_rank_memory() (max over ranks)
};

class Trainer {
 public:
  // Builds the model from `shard` (features row-normalised beforehand by the caller if wanted).
  Trainer(comm::Communicator& comm, const graph::Shard& shard, const TrainConfig& config);
  TrainResult run();
  nn::Model& model() { return model_; }

 private:
  std::string fingerprint() const;
  void save_checkpoint(int64_t epoch, const TrainResult& progress, int64_t evals_since_best);
  void evaluate(EpochRecord& record);

  comm::Communicator& comm_;
  TrainConfig config_;
  nn::Model model_;
  nn::GradientReducer reducer_;  // on model_'s gradients, timed by model_'s clock
  nn::Adam adam_;
  int64_t global_split_sizes_[3] = {0, 0, 0};
  int64_t num_features_ = 0, num_classes_ = 0;
  int64_t estimated_bytes_ = 0;
};

}  // namespace halogen::train
