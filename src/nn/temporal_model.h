#pragma once
// TemporalModel: a recurrent graph model over a snapshot sequence, on one rank of P, on config.device (every
// buffer of a model is allocated there; activations and gradients are touched by kernels/ ops only). One call of
// forward() is one time step t: it reads the step's input features x_t (owned rows), advances the hidden state
// and writes the head's output y_t = Linear(relu(h_t)) (owned rows). Hidden state is carried from step to step
// (never reset inside a sequence); gradients flow back through time inside a BPTT window and stop at its start:
//
//   model.reset_state();                  // start of the sequence: zero hidden state (EvolveGCN-O: W_0)
//   model.begin_window();                 // the state so far becomes a constant
//   for k in 0..K-1: model.forward(seq, t0 + k, x, y, /*record=*/true);
//   for k in K-1..0: model.backward(seq, t0 + k, grad_y_k);     // strictly in reverse order
//   (allreduce store().grads(), optimizer step, next window: begin_window() ...)
//
// With record = false (evaluation) nothing is kept for backward and any number of steps may follow.
// Every call is collective when the model exchanges rows (all ranks, same t, same order).
//
// Models (exact definitions in docs/dynamic.md; Â_t = D^-1/2 (A_t + I) D^-1/2, sigma = logistic):
//   evolvegcn-o  per layer l: W_t^l = matrix-GRU(W_{t-1}^l) (nn/evolve_gcn.h), H_t^l = relu(Â_t H_t^{l-1} W_t^l)
//                (h_t = H_t^L; the hidden state is the weights W_t^l, replicated on every rank)
//   tgcn         C_g = Â_t x_t W_g + b_g (one product Â_t x_t shared by g in z, r, h);
//                Z = sigma([C_z, H] L_z + c_z), R = sigma([C_r, H] L_r + c_r),
//                H~ = tanh([C_h, H o R] L_h + c_h), H_t = Z o H + (1 - Z) o H~  (state H stays with its owner)
//   gconvgru     Chebyshev convolutions (K terms, L~_t) of x_t AND of H: Z = sigma(Ch_xz(x) + Ch_hz(H)),
//                R = sigma(Ch_xr(x) + Ch_hr(H)), H~ = tanh(Ch_xh(x) + Ch_hh(H o R)), H_t = Z o H + (1 - Z) o H~
//                (H's halo rows are exchanged every step)
// Head (all models): y_t = relu(h_t) W_head + b_head, width `out`.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "kernels/ops.h"
#include "nn/snapshot_sequence.h"
#include "graph/local_graph.h"
#include "nn/parameters.h"

namespace halogen::nn {

enum class TemporalKind { evolvegcn_o, tgcn, gconvgru };

// "evolvegcn-o" | "tgcn" | "gconvgru"; UserError for anything else.
TemporalKind parse_temporal_kind(const std::string& name);
const char* temporal_kind_name(TemporalKind kind);

struct TemporalModelConfig {
  TemporalKind kind = TemporalKind::tgcn;
  int64_t in = 1;          // input features per vertex and step
  int64_t hidden = 32;     // hidden width (EvolveGCN-O: width of every evolving layer)
  int64_t out = 1;         // head width: 1 (regression), C (classes), embedding width (link prediction)
  int layers = 1;          // EvolveGCN-O: evolving GCN layers (others: 1)
  int cheb_k = 2;          // GConvGRU: Chebyshev terms K (K = 1: no neighbours, like PyG's ChebConv)
  int64_t max_window = 1;  // the most recorded forward steps before backward; caches are sized by it
  uint64_t seed = 0;       // weight init (Glorot-uniform by registration order, biases zero; nn/parameters.h)
  // Where the store, the caches and the scratch live, and the stream every op of the model is enqueued on
  // (kernels/ops.h). x, y and grad_y passed to forward/backward must live on `device` too.
  Device device = Device::cpu;
  kernels::Stream stream = nullptr;
};

class TemporalModel {
 public:
  virtual ~TemporalModel() = default;

  // Every trainable tensor, allocated and initialised by the constructor; gradients "+=" by backward().
  virtual ParameterStore& store() = 0;
  virtual const TemporalModelConfig& config() const = 0;

  virtual void reset_state() = 0;
  virtual void begin_window() = 0;
  // x (n_own, in), y (n_own, out). record: keep what backward needs (at most max_window steps per window).
  virtual void forward(SnapshotSequence& sequence, int64_t t, Matrix<const float> x, Matrix<float> y,
                       bool record) = 0;
  // Optional, right after begin_window(): the inputs of the window's next recorded steps (snapshots[i], x[i])
  // are known in advance, so a model may aggregate them in one pass (SnapshotSequence::aggregate_many: the
  // exchange of step i+1 overlaps the product of step i). The following recorded forward() calls must then be
  // exactly these steps with these inputs. Default: nothing.
  virtual void prefetch(SnapshotSequence& sequence, const std::vector<int64_t>& snapshots,
                        const std::vector<Matrix<const float>>& x) {
    (void)sequence, (void)snapshots, (void)x;
  }
  // The most recent recorded step not yet backpropagated, which must be step t; grad_y (n_own, out) =
  // dLoss/dy_t (only the loss terms of this step: the model adds what flows back from later steps).
  virtual void backward(SnapshotSequence& sequence, int64_t t, Matrix<const float> grad_y) = 0;

  // Bytes of activation caches and scratch (the parameter store aside) the constructor allocated.
  virtual int64_t scratch_bytes() const = 0;
};

// The operator normalisation and widest aggregate a model needs from its SnapshotSequence.
graph::Normalization temporal_normalization(TemporalKind kind);
int64_t temporal_max_width(const TemporalModelConfig& config);

// Builds the model for a rank owning `num_owned` vertices.
std::unique_ptr<TemporalModel> make_temporal_model(const TemporalModelConfig& config, int64_t num_owned);

}  // namespace halogen::nn
