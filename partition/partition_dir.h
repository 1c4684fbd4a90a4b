#pragma once
// `halogen partition`: graph file -> partition directory (meta.json, assignment.h5, part-%05d.h5).
// Shards are built one at a time (each build is OpenMP-parallel over rows) and written as soon as built, so
// peak memory is the graph's topology plus the halo plan plus about one shard; features are read per shard.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "partition/assign.h"
#include "partition/phase_log.h"
#include "partition/statistics.h"

namespace halogen::h5 {
class File;
}

namespace halogen::partition {

// Identity of the graph file a partition was made from (stored in meta.json, checked by `info --check`).
struct SourceFile {
  std::string path;  // as given
  std::string absolute_path;
  std::string checksum;  // io::file_checksum
  int64_t size_bytes = 0;
};
SourceFile describe_source_file(const std::string& path);

struct PartitionRequest {
  std::string graph_path;
  std::string output_dir;
  AssignOptions options;
  bool force = false;  // replace the partition in a non-empty output directory (check_output_dir)
  // Peak memory partition_graph_file aims at (bytes); 0: 3x the graph file's size, at least
  // kMinimumMemoryBudgetBytes. Only METIS adapts to it (partition/metis_memory.h).
  int64_t memory_limit_bytes = 0;
  // partition_graph_file reads /node/feat in blocks of about this many bytes (tests use tiny blocks).
  int64_t feature_block_bytes = int64_t{16} << 20;
  std::string command;  // the creation command, stored in meta.json
  // Dynamic graphs: sampled negatives per positive pair in the shards' link-prediction steps
  // (partition/link_steps.h), drawn with options.seed; meta.json records it as "link_negatives".
  int64_t link_negatives = 1;
};

struct PartitionResult {
  PartitionStats stats;
  std::vector<PhaseRecord> phases;
  int64_t process_peak_rss_bytes = 0;  // VmHWM when the directory was complete
};

// Below this, a budget of 3x the file would not even hold the process's libraries: small graphs get full
// METIS.
constexpr int64_t kMinimumMemoryBudgetBytes = int64_t{256} << 20;
// request.memory_limit_bytes, or 3x the graph file (at least kMinimumMemoryBudgetBytes).
int64_t memory_budget_bytes(const PartitionRequest& request, int64_t file_size_bytes);

// UserError unless `dir` is absent, an empty directory, or (force) a directory holding only a partition's
// files (meta.json, assignment.h5, part-*.h5 and their temporaries): --force replaces the directory as a whole,
// so anything else in it is refused rather than lost. Changes nothing.
void check_output_dir(const std::string& dir, bool force);
// UserError when the graph file lies inside the existing directory `dir` (replacing it would delete the input).
void check_graph_outside_output(const std::string& graph_path, const std::string& dir);

// Partitions a graph already in memory and writes the directory. The job holds io::OutputLock on the output
// directory throughout. The files (assignment.h5, the shards, meta.json last) are written into a temporary
// sibling directory, which replaces the output directory only when complete (io::AtomicDirectory): killed at
// any moment, the output directory holds the old partition or the new one, complete, never a mix; a failure
// (a full disk) leaves it as it was and removes the temporary directory. Adds its phases (partition, plan,
// write) to `phases`.
PartitionResult write_partition(const graph::Graph& graph, const SourceFile& source,
                                const PartitionRequest& request, PhaseLog& phases);

// meta.json of a partition in `dir` (written last, atomically). `graph` gives the name, vertex, feature and class
// counts and directedness (its adjacency and split may be empty: num_edges and num_train are given);
// `memory_json`, when not empty, is a JSON object stored as meta.json["memory"].
void write_partition_meta(const std::string& dir, const graph::Graph& graph, int64_t num_edges, int64_t num_train,
                          const SourceFile& source, const PartitionRequest& request, const PartitionResult& result,
                          const std::string& memory_json);

// The finiteness check read_graph applies to /node/feat, on rows [row_begin, row_end), streamed in blocks of
// about block_bytes. UserError naming the file, row and column of the first value that is not finite.
void validate_feature_rows(const h5::File& file, int64_t num_features, int64_t row_begin, int64_t row_end,
                           int64_t block_bytes);
// Rows owned_gid (ascending) of /node/feat, (owned_gid.size(), num_features) row-major, read in blocks of whole
// rows of about block_bytes (skipping blocks without an owned row) and gathered.
std::vector<float> read_owned_features(const h5::File& file, const std::vector<int64_t>& owned_gid,
                                       int64_t num_features, int64_t block_bytes);

// The whole command: check the directory, read and validate the graph file, partition, write. Streams: the
// feature values are never held whole (validated in blocks, then read per shard by owned rows), and METIS
// runs with only its 32-bit input resident and within memory_budget_bytes (assign_metis_within).
PartitionResult partition_graph_file(const PartitionRequest& request);

}  // namespace halogen::partition
