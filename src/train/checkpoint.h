#pragma once
// Training checkpoints: DIR/checkpoint.bin, everything a resumed run needs to continue exactly as if it had
// never stopped: parameters, Adam moments and step count, the last completed epoch (dropout masks are keyed by
// (seed, epoch, ...), so the RNG state is the seed and the epoch), and best-valid / early-stopping state.
// Written by rank 0 (weights are replicated) to a temporary file that is renamed into place, so a crash
// mid-write leaves the previous checkpoint intact. The number of ranks may differ on resume.
//
// Binary layout (little-endian): magic "HALOGEN-CKPT" + u32 version, then the fields of CheckpointState in
// order (strings and arrays prefixed by an int64 length), then a 64-bit FNV-1a checksum of all bytes before it.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::train {

struct CheckpointState {
  std::string fingerprint;  // model and data shape; a resume with another shape is refused
  int64_t epoch = 0;        // epochs completed
  int64_t adam_steps = 0;
  int64_t best_epoch = 0;
  double best_valid_acc = -1;
  double test_acc_at_best = 0;
  double train_acc_at_best = 0;
  int64_t evals_since_best = 0;
  std::vector<float> params, adam_m, adam_v;
};

std::string checkpoint_path(const std::string& dir);
// Creates DIR if needed. UserError naming the path on failure.
void write_checkpoint(const std::string& dir, const CheckpointState& state);
// UserError naming the file when missing, truncated, corrupt (checksum) or of another version.
CheckpointState read_checkpoint(const std::string& dir);

}  // namespace halogen::train
