#pragma once
// What a file is, and one content hash. Every file Halogen writes names its kind and the version of its layout
// in the same two root attributes (HDF5) or keys (JSON), `format` and `format_version`:
//   halogen.graph (2), halogen.part and halogen.assignment (2), halogen.checkpoint (1), halogen.predictions (1);
//   JSON: halogen.partition (meta.json, 2), halogen.device_profile (1), halogen.graph_stats (1).
// Integrity is HDF5's Fletcher-32 on every dataset (h5.h); content identity (a graph file's fingerprint in
// meta.json and checkpoints) is file_checksum below.
// Files written before this convention are read as the same layout: they carry `version` for
// `format_version`, and checkpoints and predictions were "halogen-checkpoint" and "halogen-predictions".
#include <cstdint>
#include <string>

#include "io/h5.h"

namespace halogen::io {

// Sets the root attributes format and format_version.
void write_format(h5::File& file, const std::string& format, int64_t version);
// The root attribute format ("" when absent), an earlier name mapped to today's.
std::string read_format(const h5::File& file);
// The root attribute format_version (or an earlier file's version); -1 when neither is present.
int64_t read_format_version(const h5::File& file);

// A fingerprint of a file's bytes, "xxh3-64:<16 hex digits>" (XXH3 64-bit, seed 0, of the whole file; what
// `xxhsum -H3` prints), fast enough (many GB/s) to recompute at every `halogen info DIR --check`.
std::string file_checksum(const std::string& path);
// Whether a recorded fingerprint is of this build's kind. Partitions and checkpoints written before XXH3
// recorded "fnv1a64:..." (FNV-style over 8-byte words), which this build cannot recompute.
bool is_current_checksum(const std::string& checksum);
// The clause a checksum mismatch message adds when the two fingerprints are of different kinds (one recorded
// by an earlier Halogen): why they cannot be compared, and what to re-run. "" when they are of one kind.
std::string checksum_kind_hint(const std::string& a, const std::string& b);

}  // namespace halogen::io
