#pragma once
// GraphConv: one graph convolution layer on one rank of P. The distributed product with the adjacency (halo
// exchange overlapped with the owned part) is nn::DistributedAdjacency's; this file holds the dense side.
//   gcn:   Z = Â X W + b                         (Â = GCN-normalised adjacency with self-loops)
//   sage:  Z = X W_self + M X W_neigh + b        (M = mean over neighbours; GraphSAGE-mean)
// Narrower side first: when out < in, T = X W is computed first and T (width out) is exchanged, then
// Z = Â T; otherwise X (width in) is exchanged and Z = (Â X) W. So the exchange always moves the narrower matrix.
//
// Shapes (n = n_own, h = n_halo):
//   x: (n + h, in)  layer input; rows [0, n) valid; rows [n, n+h) are OVERWRITTEN by the halo exchange when
//                   the layer aggregates first (they are scratch otherwise).
//   z: (n + h, out) or (n, out): rows [0, n) "=" Â X W (+ X W_self), WITHOUT the bias (the caller fuses bias
//                   with relu/dropout, or calls add_bias for the last layer).
// Backward (after forward on the same x): given grad_z (n, out) = dLoss/dZ,
//   grad W, grad W_self, grad b: "+=" into the ParameterStore's gradient views;
//   grad_x (n, in): "=" dLoss/dX for the owned rows (when requested; the halo rows' contributions have been
//   sent back to their owners and the contributions of other ranks to our rows added).
// Every rank of the job must call forward/backward the same number of times in the same order (the
// exchanges pair up across ranks), even a rank with no vertices.
#include <cstdint>
#include <string>

#include "nn/distributed_adjacency.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

enum class ConvKind { gcn, sage };

// What a layer needs from its model for one call. Every kernels:: call of the layer is enqueued on `stream`
// (nullptr on the CPU; the adjacency's stream) and timed with `clock` (nn/profile.h: gemm, elementwise; the
// adjacency times spmm, halo_exposed and halo_total on its own clock, set by the model).
struct LayerContext {
  PhaseClock* clock = nullptr;
  kernels::Stream stream = nullptr;
};

class GraphConv {
 public:
  // Registers its tensors ("layer<l>.weight", "layer<l>.weight_self" (sage), "layer<l>.bias") in `store`.
  GraphConv(ConvKind kind, int layer, int64_t in, int64_t out, ParameterStore& store);
  // Allocates the layer's scratch buffers (after store.allocate()) on adjacency.device(). The layer multiplies
  // with `adjacency` (its max_width at least min(in, out)), which must outlive it.
  void allocate(DistributedAdjacency& adjacency);
  // Bytes allocate() will take (memory estimates).
  static int64_t scratch_bytes(int64_t in, int64_t out, int64_t num_owned, int64_t num_halo);

  void forward(Matrix<float> x, Matrix<float> z, const LayerContext& context);
  void backward(Matrix<const float> x, Matrix<const float> grad_z, Matrix<float> grad_x, bool want_grad_x,
                const LayerContext& context);

  // Optional (first layer of a transform-first model on sparse features): the owned rows of the layer input as
  // CSR `x` (n, in) and its transpose `x_t` (in, n), holding exactly the values of x's owned rows at each
  // call. The products with W then use spmm instead of gemm. Only valid when transform_first() and the input
  // gradient is never requested. The views must stay valid for the layer's lifetime.
  void set_sparse_input(const kernels::CsrView& x, const kernels::CsrView& x_t);

  bool transform_first() const { return out_ < in_; }
  int64_t in() const { return in_; }
  int64_t out() const { return out_; }
  Span<const float> bias() const;
  int layer() const { return layer_; }

 private:
  void sparse_product(const kernels::CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate,
                      const LayerContext& context);
  void timed_gemm(Matrix<const float> a, bool ta, Matrix<const float> b, bool tb, Matrix<float> c, float beta,
                  const LayerContext& context);

  ConvKind kind_;
  int layer_;
  int64_t in_, out_;
  ParameterStore& store_;
  int weight_ = -1, weight_self_ = -1, bias_ = -1;
  DistributedAdjacency* adjacency_ = nullptr;
  bool sparse_input_ = false;
  kernels::CsrView sparse_x_, sparse_x_t_;
  int64_t num_owned_ = 0, num_halo_ = 0;
  std::string forward_range_, backward_range_;  // "layer <l> forward" / "... backward" (profiler ranges)
  // Scratch, allocated once. transform-first: t (n+h, out), grad_t (n, out); aggregate-first: ax (n, in),
  // grad_ax (n, in). (The partial sums of the reverse exchange are the adjacency's.)
  Tensor t_or_ax_, grad_t_or_ax_;
};

}  // namespace halogen::nn
