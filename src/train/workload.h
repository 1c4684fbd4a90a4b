#pragma once
// Workload: what the one epoch runner (train/trainer.h) trains on one rank of P - a model together with its
// task. The runner owns everything every model shares: the epoch loop, the gradient allreduce, Adam, the
// non-finite-loss and failure policies, evaluation scheduling, best-valid tracking and early stopping, metrics,
// checkpoints and --resume, progress output and memory reports. A workload says only how the gradients of one
// optimizer step are made and how the model is evaluated:
//
//   node classification (static GCN/SAGE, train/node_classification.h): one optimizer step per epoch;
//   temporal models (train/temporal_workload.h): one step per BPTT window of the training sequence.
//
// Protocol of one epoch (every call collective: every rank calls the same functions in the same order):
//   begin_epoch(e); for s in 0 .. steps_per_epoch()-1: { step_local(e, s, reducer); reducer.finish(); <Adam> }
// Gradients: step_local() computes this rank's terms into parameters().grads() ("=": zeroed by the workload
// first) and hands them to the runner's nn::GradientReducer as they become final: reducer.begin(stream)
// before its backward, then reducer.layer_ready(l) as each layer's backward ends (the allreduce of that
// layer's bucket overlaps the rest of the backward), or reducer.all_ready() at the end; the runner waits in
// finish(), so after the step the gradients are summed over ranks. The epoch loss is the sum over ranks and steps of step_local()'s
// return values divided by loss_denominator().
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"
#include "nn/gradient_reducer.h"
#include "nn/parameters.h"
#include "nn/profile.h"
#include "train/run_options.h"

namespace halogen::train {

// Figures of one evaluation by name: train_acc/valid_acc/test_acc, test_mse, test_map, ...
using Metrics = std::map<std::string, double>;

class Workload {
 public:
  virtual ~Workload() = default;

  virtual const char* model_name() const = 0;  // "gcn", "sage", "evolvegcn-o", "tgcn", "gconvgru"
  virtual const char* task_name() const = 0;   // "node-classification", "regression", "link", "node"
  // Model and data shape; a checkpoint written for another fingerprint is refused on --resume.
  virtual std::string fingerprint() const = 0;
  // The model's options that determine what it computes (train/run_options.h; the runner adds the optimizer's):
  // recorded in checkpoints, and a --resume with other values is refused.
  virtual RunOptions options() const = 0;
  // Seed of weight initialisation and dropout (a checkpoint's RNG state is this seed and the epoch).
  virtual uint64_t seed() const = 0;

  virtual nn::ParameterStore& parameters() = 0;
  virtual nn::PhaseClock& clock() = 0;
  virtual kernels::Stream stream() const = 0;
  virtual Device device() const = 0;

  // Adam's weight decay per parameter layer (nn/adam.h), given --weight-decay and --weight-decay-all-layers:
  // by default on layer 0 only, or on every one of the `parameter_layers`.
  virtual std::vector<float> weight_decay_per_layer(int parameter_layers, float weight_decay, bool all_layers) const {
    return std::vector<float>(all_layers ? static_cast<size_t>(parameter_layers) : 1, weight_decay);
  }
  virtual int64_t steps_per_epoch() const = 0;
  virtual void begin_epoch(int64_t epoch) { (void)epoch; }
  virtual double step_local(int64_t epoch, int64_t step, nn::GradientReducer& reducer) = 0;
  // Bucket size of the gradient allreduce (nn/gradient_reducer.h): one bucket per layer by default.
  virtual int64_t gradient_bucket_bytes() const { return nn::GradientReducer::kDefaultBucketBytes; }
  virtual double loss_denominator() const = 0;
  // After a non-finite loss (collective): what is known about where it came from, e.g. "first non-finite values
  // in the output of layer 1". Empty when nothing more is known.
  virtual std::string diagnose_nonfinite_loss() { return {}; }

  // Global figures (collective). Evaluation runs the model with dropout off and leaves no trace in training.
  virtual Metrics evaluate() = 0;
  // Figures that do not depend on the model (e.g. naive forecasts), computed once; collective.
  virtual Metrics baselines() { return {}; }
  // Extra fields of the final metrics record (e.g. window, train_steps, halo_bytes_sent).
  virtual Metrics summary() const { return {}; }
  // Time steps trained per epoch (temporal: snapshots; 0 for static graphs): gives snapshots_per_s.
  virtual int64_t snapshots_per_epoch() const { return 0; }

  // One throw-away step before epoch 1 where a backend allocates lazily (the GPU's cuSPARSE descriptors), so
  // that every buffer exists before the first epoch. Must leave parameters and optimizer state untouched.
  virtual void warm_up(int64_t epoch) { (void)epoch; }
  // This rank's predicted bytes of buffers (parameters and Adam included); 0 when unknown.
  virtual int64_t estimated_bytes() const { return 0; }
  // The same by what holds it (nn::MemoryBreakdown's names: structure, halo, ...; bytes); empty when not known.
  virtual Metrics memory_plan() const { return {}; }
};

}  // namespace halogen::train
