#pragma once
// Per-phase wall-clock accounting of a training step (milliseconds, host clock). Layers add to spmm/gemm/
// elementwise; the halo exchange keeps its own comm::HaloStats; the trainer adds allreduce and optimizer.
namespace halogen::nn {

struct PhaseTimes {
  double spmm_ms = 0;
  double gemm_ms = 0;
  double elementwise_ms = 0;  // bias, relu, dropout, masks, loss
  double allreduce_ms = 0;
  double optimizer_ms = 0;
  void reset() { *this = PhaseTimes{}; }
};

}  // namespace halogen::nn
