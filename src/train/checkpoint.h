#pragma once
// Training checkpoints: HDF5 files with named tensors, everything a resumed run needs to continue exactly as if
// it had never stopped, and everything `halogen predict` needs to rebuild the model (docs/train.md,
// "Checkpoints", is the user's description of this layout; python/ reads it):
//
//   DIR/last.h5   after the last checkpointed epoch (--checkpoint DIR [--checkpoint-every N])
//   DIR/best.h5   the model of the best validation accuracy so far (--save-best)
//
//   /layers/<l>/<name>                  float32 parameter of layer l, [rows, cols] as the ParameterStore holds
//                                       it (GCN/SAGE weight [in, out]); biases of one row are 1-D [cols]
//   /optimizer/m/layers/<l>/<name>      Adam first moment, same names and shapes
//   /optimizer/v/layers/<l>/<name>      Adam second moment; attribute /optimizer@steps (int64)
//   every tensor dataset: HDF5's Fletcher-32, verified by every read (checkpoints before it also carry an
//   attribute fnv1a64 per tensor, now ignored)
//   / attributes: format="halogen.checkpoint" (earlier: "halogen-checkpoint"), format_version=1 (int64), epoch (epochs completed), model, task,
//     fingerprint (model and data shape), graph_checksum (meta.json's graph.checksum: the graph file, not its
//     partition), partition (JSON: parts, method, assignment checksum, directory), config (JSON RunOptions:
//     train/run_options.h), best_epoch, best_valid_acc, test_acc_at_best, train_acc_at_best,
//     evals_since_best (early-stopping state), rng_seed (uint64; the RNG state is (rng_seed, epoch): dropout
//     of epoch e is keyed by (seed, e, layer, vertex, column), so nothing else needs saving).
//
// <l> is ParameterInfo::layer and <name> the parameter's name without its "layer<l>." prefix ("layer0.weight"
// -> /layers/0/weight), or its full name when it has no such prefix ("tgcn.conv_bias" -> /layers/0/tgcn.conv_bias).
//
// Written by rank 0 (weights are replicated) to a temporary file in the same directory that is read back,
// synced and renamed into place, so a crash or a full disk mid-write leaves the previous checkpoint intact.
#include <cstdint>
#include <string>
#include <vector>

#include "nn/parameters.h"
#include "train/run_options.h"

namespace halogen::train {

inline constexpr const char* kCheckpointFormat = "halogen.checkpoint";
inline constexpr int64_t kCheckpointVersion = 1;

// The root attributes and the Adam step count.
struct CheckpointHeader {
  std::string model;           // gcn | sage | evolvegcn-o | tgcn | gconvgru
  std::string task;            // node-classification | regression | link | node
  std::string fingerprint;     // Workload::fingerprint()
  std::string graph_checksum;  // io::PartitionMeta::graph_checksum
  std::string partition;       // JSON object
  std::string config;          // JSON object of RunOptions
  int64_t epoch = 0;           // epochs completed
  int64_t adam_steps = 0;
  int64_t best_epoch = 0;
  double best_valid_acc = -1;
  double best_valid_loss = 0;  // of the best epoch under --best-by loss (absent in earlier files: 0)
  double test_acc_at_best = 0;
  double train_acc_at_best = 0;
  int64_t evals_since_best = 0;
  uint64_t rng_seed = 0;
};

struct CheckpointState {
  CheckpointHeader header;
  std::vector<nn::ParameterInfo> layout;      // the tensors of params / adam_m / adam_v, in store order
  std::vector<float> params, adam_m, adam_v;  // flat, as in nn::ParameterStore (adam_*: empty = not read)
};

std::string last_checkpoint_path(const std::string& dir);  // DIR/last.h5
std::string best_checkpoint_path(const std::string& dir);  // DIR/best.h5
// A checkpoint file as given, or for a directory its best.h5 when there is one, else its last.h5. UserError
// naming `path` when there is neither.
std::string resolve_checkpoint(const std::string& path);
// "layers/0/weight" (no leading '/'): where a parameter lives under /, /optimizer/m/ and /optimizer/v/.
std::string tensor_dataset(const nn::ParameterInfo& info);

// Creates the parent directory if needed; atomic (temporary name, rename). UserError naming the path on failure.
void write_checkpoint(const std::string& path, const CheckpointState& state);
// The root attributes. UserError naming the file when missing, not HDF5, not a checkpoint or of another version.
CheckpointHeader read_checkpoint_header(const std::string& path);
// The header and the tensors of `layout` (a model's ParameterStore, in its order): every tensor must exist with
// the layout's shape and an intact checksum (UserError naming the file, the dataset and what differs). Adam's
// moments only when `with_optimizer`.
CheckpointState read_checkpoint(const std::string& path, const std::vector<nn::ParameterInfo>& layout,
                                bool with_optimizer);

// --resume rules: the options the checkpoint was trained with (header.config) against this run's. Returns ""
// when they agree, else one sentence naming the first differing option with both values, e.g.
// "--lr is 0.02, the checkpoint was trained with 0.01". A changed "lr" is accepted when `allow_lr_change`.
std::string compare_run_options(const std::string& checkpoint_config, const RunOptions& run,
                                bool allow_lr_change);

// The parameter layout of a store, in its order.
std::vector<nn::ParameterInfo> parameter_layout(const nn::ParameterStore& store);

}  // namespace halogen::train
