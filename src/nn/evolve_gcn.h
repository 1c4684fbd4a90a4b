#pragma once
// EvolveGCN-O weight evolution (Pareja et al., AAAI 2020, as in the authors' code egcn_o.py / mat_GRU_cell):
// the GCN weight of a layer is the hidden state of a GRU whose rows are matrices. With Q = W_{t-1} (d_in,
// d_out) and, in the -O variant, the input X = Q as well:
//   Z  = sigmoid(W_Z X + U_Z Q + B_Z)
//   R  = sigmoid(W_R X + U_R Q + B_R)
//   H~ = tanh   (W_H X + U_H (R o Q) + B_H)
//   W_t = Q' = (1 - Z) o Q + Z o H~
// W_*, U_*: (d_in, d_in) applied from the left; B_*: (d_in, d_out); o = elementwise product. The layer then
// computes H_t = act(Â_t H_t W_t); since W_t does not depend on the graph, the T weights are computed first
// (on every rank identically: weights are replicated) and the T graph products are independent.
//
// This file is the weight recurrence only: forward over T steps, and backward through time given dLoss/dW_t
// for every step. Host (CPU) buffers; products go through kernels::gemm, elementwise gate math is a host loop
// (a device kernel is still to be written for GPU runs).
#include <cstdint>
#include <vector>

#include "core/buffer.h"

namespace halogen::nn {

// The nine GRU tensors of one layer, or their gradients (same shapes).
struct MatrixGruTensors {
  Buffer<float> w_z, u_z, w_r, u_r, w_h, u_h;  // (d_in, d_in)
  Buffer<float> b_z, b_r, b_h;                 // (d_in, d_out)

  MatrixGruTensors() = default;
  MatrixGruTensors(int64_t d_in, int64_t d_out);
  // The nine buffers in a fixed order (w_z, u_z, b_z, w_r, u_r, b_r, w_h, u_h, b_h): for optimisers and
  // tests.
  std::vector<Buffer<float>*> all();
  void zero();
};

class EvolveGcnWeights {
 public:
  EvolveGcnWeights(int64_t d_in, int64_t d_out);

  int64_t d_in() const { return d_in_; }
  int64_t d_out() const { return d_out_; }
  MatrixGruTensors& gru() { return gru_; }
  const MatrixGruTensors& gru() const { return gru_; }
  MatrixGruTensors& gru_grad() { return gru_grad_; }

  // W_1..W_T from w0 = W_0 (d_in, d_out). Keeps every step's Q, Z, R, H~ for backward. weight(t) for
  // t in [1, steps] is W_t; weight(0) is the copy of w0.
  void forward(Matrix<const float> w0, int64_t steps);
  Matrix<const float> weight(int64_t t) const { return q_[t].matrix(); }
  int64_t steps() const { return static_cast<int64_t>(q_.size()) - 1; }

  // Backward through time. grad_w[t - 1] = dLoss/dW_t (d_in, d_out) for t = 1..steps (the gradient through
  // the graph products of step t only). Gradients of the nine GRU tensors "+=" into gru_grad(); grad_w0
  // (d_in, d_out) "=" dLoss/dW_0.
  void backward(const std::vector<Matrix<const float>>& grad_w, Matrix<float> grad_w0);

 private:
  int64_t d_in_, d_out_;
  MatrixGruTensors gru_, gru_grad_;
  std::vector<Buffer<float>> q_;                    // [steps + 1] W_0..W_T
  std::vector<Buffer<float>> z_, r_, h_candidate_;  // [steps] gates of the step producing W_{t+1}
};

}  // namespace halogen::nn
