#pragma once
// EvolveGCN-O weight evolution (Pareja et al., AAAI 2020, as in the authors' code egcn_o.py / mat_GRU_cell):
// the GCN weight of a layer is the hidden state of a GRU whose rows are matrices. With Q = W_{t-1} (d_in,
// d_out) and, in the -O variant, the input X = Q as well:
//   Z  = sigmoid(W_Z X + U_Z Q + B_Z)
//   R  = sigmoid(W_R X + U_R Q + B_R)
//   H~ = tanh   (W_H X + U_H (R o Q) + B_H)
//   W_t = Q' = (1 - Z) o Q + Z o H~
// W_*, U_*: (d_in, d_in) applied from the left; B_*: (d_in, d_out); o = elementwise product. The layer then
// computes H_t = act(Â_t H_t W_t); since W_t does not depend on the graph, the T weights can be computed first
// (on every rank identically: weights are replicated) and the T graph products are independent.
//
// Two levels:
//   MatrixGruStep     one step forward / one step backward on VIEWS (the nine tensors may live in a model's
//                     ParameterStore; the caller keeps each step's gates). Used by nn/evolvegcn_o.cpp.
//   EvolveGcnWeights  owns the nine tensors and runs T steps forward and BPTT over them (a self-contained
//                     recurrence, built on MatrixGruStep; its test checks the step functions too).
// Buffers on the device given to the constructors (default: host); products go through kernels::gemm, the gate
// math through the fused GRU ops of kernels/ops.h (gru_gates, gru_update and their backward), all on `stream`.
#include <cstdint>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::nn {

// Views of the nine tensors of one layer: T = const float for parameters, float for gradients.
// W_*, U_*: (d_in, d_in); B_*: (d_in, d_out). Order of MatrixGruTensors::all().
template <typename T>
struct MatrixGruViews {
  Matrix<T> w_z, u_z, b_z, w_r, u_r, b_r, w_h, u_h, b_h;
};
using MatrixGruParams = MatrixGruViews<const float>;
using MatrixGruGrads = MatrixGruViews<float>;

// What one step keeps for its backward: the gates of the step computing Q' from Q, each (d_in, d_out).
struct MatrixGruGates {
  Matrix<float> z, r, h_candidate;
};

// One step of the recurrence on views. Owns only a (d_in, d_out) workspace: no allocation per call.
class MatrixGruStep {
 public:
  MatrixGruStep(int64_t d_in, int64_t d_out, Device device = Device::cpu, kernels::Stream stream = nullptr);
  int64_t d_in() const { return d_in_; }
  int64_t d_out() const { return d_out_; }

  // next "=" GRU(q) (d_in, d_out); the gates "=" into `gates`. next must not alias q.
  void forward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates, Matrix<float> next);
  // Backward of that step: grad_next = dLoss/dQ'. The nine gradients "+=" into `grad`; grad_q "=" dLoss/dQ
  // (must not alias grad_next). q and gates are those of the forward.
  void backward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates,
                Matrix<const float> grad_next, const MatrixGruGrads& grad, Matrix<float> grad_q);
  int64_t workspace_bytes() const;

 private:
  int64_t d_in_, d_out_;
  Device device_;
  kernels::Stream stream_;
  Tensor rq_, d_rq_, da_z_, da_r_, da_h_;  // (d_in, d_out) each
};

// The nine GRU tensors of one layer, or their gradients (same shapes).
struct MatrixGruTensors {
  Buffer<float> w_z, u_z, w_r, u_r, w_h, u_h;  // (d_in, d_in)
  Buffer<float> b_z, b_r, b_h;                 // (d_in, d_out)

  MatrixGruTensors() = default;
  MatrixGruTensors(int64_t d_in, int64_t d_out, Device device = Device::cpu);
  // The nine buffers in a fixed order (w_z, u_z, b_z, w_r, u_r, b_r, w_h, u_h, b_h): for optimisers and
  // tests.
  std::vector<Buffer<float>*> all();
  void zero();
  MatrixGruParams view() const;
  MatrixGruGrads mutable_view();
};

class EvolveGcnWeights {
 public:
  EvolveGcnWeights(int64_t d_in, int64_t d_out, Device device = Device::cpu, kernels::Stream stream = nullptr);

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
  Device device_;
  kernels::Stream stream_;
  MatrixGruTensors gru_, gru_grad_;
  MatrixGruStep step_;
  std::vector<Buffer<float>> q_;                    // [steps + 1] W_0..W_T
  std::vector<Buffer<float>> z_, r_, h_candidate_;  // [steps] gates of the step producing W_{t+1}
};

}  // namespace halogen::nn
