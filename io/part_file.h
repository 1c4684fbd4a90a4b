#pragma once
// Partition directories (DESIGN.md, "Files"): meta.json + assignment.h5 + part-%05d.h5, one shard per rank.
//
// Version 2 (meta.json, assignment.h5 and every shard): every dataset carries a Fletcher-32 checksum that
// every read verifies (io/h5.h), and meta.json holds no per-pair (P x P) data: it grows with P (the rows part p
// sends to part q are /send/offsets of p's shard). Version 1 directories (no checksums) are refused with a
// message to partition the graph again.
//
// meta.json (written by partition/partition_dir.cpp; the keys read back here are stable):
//   format="halogen.partition", format_version=2, method, num_parts,
//   graph: {file, file_absolute, checksum, size_bytes, name, num_nodes, num_edges, num_features, num_classes,
//           directed, num_train},
//   parts: [{part, owned, halo, nnz, train, send}], statistics: {...}, phases: [...], command.
// Shard files: root attributes format="halogen.part" format_version=2 part num_parts num_nodes num_edges num_classes
// num_features name target_steps; datasets as in DESIGN.md, plus /csr/weight (optional) and /node/target
// (optional, [T, n_own] or [n_own]) with, when the graph file records a per-node standardisation of it
// (convert --preprocess; meta.json's graph.preprocess names the transform), /node/label_offset and
// /node/label_scale (float64 [n_own], the owned vertices' values of the graph file's datasets of those names;
// read into Shard::target_offset/target_scale; absent in partitions made before they were written). Dynamic
// graphs add root attribute num_snapshots and per time step /snapshots/NNNNN/{halo/rows, halo/recv_offsets, send/idx, send/offsets, csr/indptr, csr/indices,
// csr/weight (optional), degree/owned, degree/halo} (graph/shard.h, ShardSnapshot), read into
// Shard::snapshots. Link prediction (dynamic graphs, partition/link_steps.h) adds root attributes
// link_negatives and num_link_steps (= num_snapshots - 1) and per step /link/NNNNN/{sources int32,
// source_offsets int64, target int32, label uint8, fetch/gid int64, fetch/recv_offsets int64, send/idx int32,
// send/offsets int64} (graph/shard.h, ShardLinkStep), read into Shard::link_steps; shards without them read
// as link_negatives = 0 (no link steps).
#include <cstdint>
#include <string>
#include <vector>

#include "graph/shard.h"

namespace halogen::io {

// The version of meta.json, assignment.h5 and the shards this build writes and reads.
inline constexpr int64_t kPartitionVersion = 2;

struct PartitionMeta {
  std::string method;  // metis | random | contiguous
  int32_t num_parts = 0;
  std::string graph_file;  // path of the source graph file as given at creation
  std::string graph_checksum;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t num_features = 0;
  int32_t num_classes = 0;
  // Added by the partition issue:
  std::string graph_file_absolute;  // absolute path at creation (used by `halogen info DIR --check`)
  int64_t graph_file_size = 0;      // bytes
  std::string graph_name;
  bool directed = false;
  int64_t num_train = 0;            // global training-vertex count (loss normalisation)
  std::vector<int64_t> part_owned;  // (P) owned vertices per part
  std::vector<int64_t> part_halo;   // (P) halo rows per part
  int64_t link_negatives = 0;       // negatives per positive in the shards' link steps; 0: none written
  // graph.preprocess {name, formula} when the graph file records its targets' transform (convert --preprocess)
  std::string preprocess, preprocess_formula;
  // options.vertex_order: "rcm" or "gid" (partition/vertex_order.h); "gid" for partitions made before it.
  std::string vertex_order;
};

// Reads DIR/meta.json; UserError when missing or malformed.
PartitionMeta read_partition_meta(const std::string& dir);

// "DIR/part-00003.h5"
std::string shard_path(const std::string& dir, int part);

// "DIR/assignment.h5" holds /part int32 [N]: the owner part of every global vertex.
std::string assignment_path(const std::string& dir);
void write_assignment(const std::string& path, const std::vector<int32_t>& part_of, int32_t num_parts);
// Reads and checks values in [0, num_parts) and length num_nodes.
std::vector<int32_t> read_assignment(const std::string& path, int32_t num_parts, int64_t num_nodes);

// Reads one shard (only this rank's file) and validates it against itself and the meta (P, sizes, local ids
// in range, offsets monotone). UserError naming the file and dataset on any violation.
graph::Shard read_shard(const std::string& dir, int part);
// Same, reading the file at `path` and checking it against `meta` (no meta.json needed).
graph::Shard read_shard_file(const std::string& path, int part, const PartitionMeta& meta);

// Writes one shard file atomically.
void write_shard(const std::string& path, const graph::Shard& shard);

}  // namespace halogen::io
