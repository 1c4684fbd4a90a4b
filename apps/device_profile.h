#pragma once
// Device profiles of `halogen plan`: small JSON files with the rates train::estimate_epoch needs, written by
// `halogen bench profile -o FILE` (measured here) or shipped (profiles/h200.json: datasheet figures).
//
//   {"format": "halogen.device_profile", "format_version": 1, "name": "cpu-vm", "kind": "cpu",
//    "calibrated": true, "source": "...", "memory_bytes": 25769803776, "cache_bytes": 33554432,
//    "cache_shared": true (the ranks of a node share the cache; default true for cpu; written only with a
//    cache_bytes > 0),
//    "link": {"gbs": 3.1, "latency_us": 2.0, "overlap": true, "overlap_share": 0.4 (optional, default 1),
//             "exchange_gbs": 4.5 (optional: point-to-point bandwidth of the halo exchange; default gbs)},
//    "inter_node_link": {"gbs": 40, "latency_us": 5, "ranks_per_node": 8},     (optional)
//    "rates": [{"threads": 1, "stream_gbs": 9.5, "gemm_gflops": 60, "dropout_gelems": 0.2,
//               "spmm": {"widths": [8, 16, 32, 64, 128], "gbs": [...]}}, ...]}
//   "spmm" may also give rates per size of the dense operand (rows of X, ascending; bench profile writes
//   these): {"widths": [...], "rows": [131072, 524288], "gbs": [[... per width], [... per width]]}.
#include <string>

#include "train/epoch_estimate.h"

namespace halogen::app {

// Reads and checks a profile file; UserError naming the file and the field on anything missing or not a
// positive number.
train::DeviceProfile read_device_profile(const std::string& path);

// The link figures for a job of `num_ranks` ranks: inter_node_link's when the profile has one and the job
// spans more than ranks_per_node ranks, else link's.
train::DeviceProfile profile_for_ranks(const train::DeviceProfile& profile, int num_ranks);

// Writes `profile` as above (atomically: a temporary file renamed over `path`).
void write_device_profile(const train::DeviceProfile& profile, const std::string& path);

}  // namespace halogen::app
