#pragma once
// NodeModel: what training (train/node_classification.h) and inference (train/predict.h) need of a static
// node-classification model on one rank of P, whatever its architecture. A model registers itself in
// nn/model_registry.h, whose `build` makes one. nn::Model (nn/model.h, the layer stack of GCN, SAGE, GIN,
// APPNP and GAT) is one; a model with another structure (nn/models/gcnii.cpp) is another.
//
// Every implementation keeps the contract nn/model.h describes: every buffer is allocated at construction,
// dropout is keyed by (seed, epoch, layer, global vertex id, column) so P ranks compute what one rank computes,
// every call is collective (the halo exchanges pair up across ranks), and evaluation allocates nothing.
#include <array>
#include <cstdint>

#include "core/buffer.h"
#include "nn/gradient_reducer.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

struct ModelConfig;

class NodeModel {
 public:
  virtual ~NodeModel() = default;
  // Forward (dropout on, keyed by `epoch`), loss, backward; gradients "=" (zeroed first). With a reducer, the
  // backward hands it each layer as soon as that layer's gradients are final (nn/gradient_reducer.h).
  // Returns this rank's sum of per-vertex losses over its training rows, gradients scaled by `loss_scale`.
  virtual double train_step_local(int64_t epoch, float loss_scale, GradientReducer* reducer = nullptr) = 0;
  // Forward with dropout off; correct predictions on this rank for train, valid, test.
  virtual std::array<int64_t, 3> evaluate_local() = 0;
  // After evaluate_local(): this rank's sum of cross-entropy over split `split`'s rows (0 train, 1 valid, 2 test).
  virtual double evaluated_loss_local(int split) = 0;
  // The forward with dropout off, as evaluate_local() runs it; afterwards logits() and layer_output(l) hold it.
  virtual void infer() = 0;
  // Logits of the owned rows after the last forward: (n_own, num_classes).
  virtual Matrix<const float> logits() const = 0;
  // Outputs a user can ask `halogen predict --embeddings L` for: layers 0 .. num_layers() - 1.
  virtual int num_layers() const = 0;
  virtual Matrix<const float> layer_output(int l) const = 0;
  // The first layer whose output in training step `epoch`'s forward holds a NaN/Inf, else -1 (collective).
  virtual int first_nonfinite_layer_local(int64_t epoch) = 0;
  // This rank's number of (labelled) train, valid, test vertices.
  virtual std::array<int64_t, 3> split_sizes_local() const = 0;
  // Nonzero features held for a sparse input path (0: dense), and whether the rank's A_own is stored once: the
  // figures the memory plan (RankShape) takes from a built model.
  virtual int64_t sparse_input_nonzeros() const = 0;
  virtual bool own_symmetric() const = 0;
  virtual ParameterStore& parameters() = 0;
  virtual PhaseClock& clock() = 0;
  virtual kernels::Stream stream() const = 0;
  virtual Device device() const = 0;
  virtual const ModelConfig& config() const = 0;
  virtual void set_overlap(bool overlap) = 0;
  // Payload bytes this rank's halo exchanges have sent so far (comm::HaloStats::bytes_sent; BF16 rows count 2
  // bytes per element).
  virtual int64_t halo_bytes_sent() const = 0;
};

}  // namespace halogen::nn
