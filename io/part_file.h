#pragma once
// Partition directories (DESIGN.md, "Files"): meta.json + assignment.h5 + part-%05d.h5, one shard per rank.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/shard.h"

namespace halogen::io {

struct PartitionMeta {
  std::string method;        // metis | random | contiguous
  int32_t num_parts = 0;
  std::string graph_file;    // path of the source graph file as given at creation
  std::string graph_checksum;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;
  int64_t num_features = 0;
  int32_t num_classes = 0;
};

// Reads DIR/meta.json; UserError when missing or malformed.
PartitionMeta read_partition_meta(const std::string& dir);

// "DIR/part-00003.h5"
std::string shard_path(const std::string& dir, int part);

// Reads one shard (only this rank's file) and validates it against itself and the meta (P, sizes, local ids
// in range, offsets monotone). UserError naming the file and dataset on any violation.
graph::Shard read_shard(const std::string& dir, int part);

// Writes one shard file atomically.
void write_shard(const std::string& path, const graph::Shard& shard);

}  // namespace halogen::io
