#pragma once
// ParameterStore: every trainable tensor of a model in ONE flat buffer (and its gradient in another), so the
// gradient allreduce is a single call and the optimizer state is two more flat buffers. Tensors are
// registered, then allocate() places them; views stay valid for the store's lifetime.
//
// Initialisation is identical on every rank without communication: weight k (registration order) element e
// is Glorot-uniform  (2u - 1) * sqrt(6 / (fan_in + fan_out)),  u = rng::uniform(seed, stream_id(kWeightInit,
// k), e); biases are zero.
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::nn {

struct ParameterInfo {
  std::string name;   // "layer0.weight", "layer1.bias", ...
  int layer = 0;      // the layer it belongs to (weight decay groups, NaN reports)
  int64_t rows = 0, cols = 0;
  int64_t offset = 0; // in the flat buffer
  bool is_bias = false;
  int64_t size() const { return rows * cols; }
};

class ParameterStore {
 public:
  // Returns the tensor's index. Only before allocate().
  int add(const std::string& name, int layer, int64_t rows, int64_t cols, bool is_bias);
  void allocate(Device device);
  // Glorot-uniform weights, zero biases, zero gradients.
  void initialize(uint64_t seed);

  int count() const { return static_cast<int>(infos_.size()); }
  const ParameterInfo& info(int index) const { return infos_[index]; }
  int64_t total_size() const { return total_; }

  Matrix<float> param(int index);
  Matrix<float> grad(int index);
  Tensor& params() { return params_; }
  Tensor& grads() { return grads_; }
  const Tensor& params() const { return params_; }
  // Gradients = 0, enqueued on `stream` (kernels::fill).
  void zero_grads(kernels::Stream stream = nullptr);
  // The first layer whose parameters hold a NaN/Inf, else -1 (one host read of the whole buffer; per tensor only
  // when something is wrong). Identical on every rank when the parameters are.
  int first_nonfinite_layer(kernels::Stream stream = nullptr) const;

 private:
  std::vector<ParameterInfo> infos_;
  int64_t total_ = 0;
  Tensor params_, grads_;
};

}  // namespace halogen::nn
