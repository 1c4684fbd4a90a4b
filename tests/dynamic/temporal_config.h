#pragma once
// Test support: the small temporal training run of the invariance and determinism suites (a model and task on
// small_temporal_graph with add_series, BPTT window 2, 3 epochs evaluated every epoch). Header-only; include as
// "dynamic/temporal_config.h".
#include "train/trainer.h"

namespace halogen::testing {

inline train::TemporalTrainConfig small_temporal_config(nn::TemporalKind model, train::TaskKind task,
                                                        Device device = Device::cpu) {
  train::TemporalTrainConfig config;
  config.device = device;
  config.model.kind = model;
  config.model.hidden = 6;
  config.model.layers = model == nn::TemporalKind::evolvegcn_o ? 2 : 1;
  config.model.cheb_k = 3;
  config.model.seed = 11;
  config.task.kind = task;
  config.task.lags = 2;
  config.task.train_fraction = 0.6;
  config.task.negatives = 2;
  config.task.seed = 4;
  config.task.source = "memory";
  config.window = 2;
  config.epochs = 3;
  config.eval_every = 1;
  config.print_epochs = false;
  return config;
}

}  // namespace halogen::testing
