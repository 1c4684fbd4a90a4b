#pragma once
// Inference from a checkpoint (`halogen predict`): the static node-classification model (GCN or SAGE) a
// checkpoint describes, rebuilt on this rank's shard of ANY partition of the same graph, run once through the
// training code's forward (nn::Model::infer: the same distributed products and halo exchanges, dropout off,
// as the evaluation during training), gathered to rank 0 and written there as one HDF5 file in global vertex
// order:
//
//   /probabilities  float32 [N, C]   softmax of the logits            (default)
//   /predicted      int32   [N]      argmax of the logits (ties: the lowest class, as training's accuracy)
//   /embeddings     float32 [N, H]   instead of both: the output of layer `embeddings_layer` (0-based; hidden
//                                    layers: relu(conv + bias), the last layer: its logits)
//   / attributes: format="halogen.predictions" (earlier: "halogen-predictions"), format_version=1, checkpoint
//   (its path), epoch, model,
//                 graph_checksum, num_nodes, and layer (embeddings only)
//
// Gather: every rank sends its owned rows (n_own x width floats) to rank 0, which places part q's i-th row at
// the i-th vertex of part q's /owned/gid (read from its shard: in any vertex order, rcm or gid), checked
// against the partition's assignment.h5. Rank 0 holds N x width floats twice while writing. Temporal models
// (evolvegcn-o, tgcn, gconvgru) are refused: their inference (a state carried over snapshots) is not
// implemented yet.
#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "graph/shard.h"
#include "io/part_file.h"
#include "nn/model_registry.h"
#include "train/checkpoint.h"

namespace halogen::train {

// The model a checkpoint holds and the preprocessing its features had.
struct CheckpointModel {
  nn::ModelConfig model;
  bool row_normalize = false;
};
// From the header's model and config attributes. UserError naming `path` for a temporal model or a missing option.
CheckpointModel checkpoint_model(const CheckpointHeader& header, const std::string& path);

struct PredictRequest {
  std::string checkpoint_path;  // a resolved file (resolve_checkpoint)
  std::string partition_dir;    // for assignment.h5
  std::string output;           // written by rank 0, atomically
  int embeddings_layer = -1;    // >= 0: write /embeddings of this layer instead of the class probabilities
};

struct PredictSummary {
  int64_t rows = 0, cols = 0;  // of the written matrix
};

// Collective. `shard` must be preprocessed as checkpoint_model() says and belong to the checkpoint's graph (the
// caller compares graph checksums). UserError (on every rank, once) when the checkpoint's tensors do not fit the
// model built on this graph, when the layer is out of range, or when the output cannot be written.
PredictSummary predict(comm::Communicator& comm, const io::PartitionMeta& meta, const graph::Shard& shard,
                       const CheckpointHeader& header, const CheckpointModel& config, const PredictRequest& request);

}  // namespace halogen::train
