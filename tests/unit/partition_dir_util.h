#pragma once
// Helpers of the tests that write partition directories from in-memory graphs (partition_shard_test,
// dynamic_partition_test, dynamic_halo_stats_test, partition_link_steps_test, dynamic_io_test): fresh
// per-process directories, small undirected CSRs, and write_partition with a made-up source file.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "graph/build.h"
#include "partition/partition_dir.h"
#include "temp_dir_util.h"

namespace halogen::test {

// <tmp>/halogen_<suite>_<pid>/<name> (test_temp_dir: removed at exit), emptied (removed if it exists; not
// created).
inline std::string fresh_dir(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir = test_temp_dir(suite) / name;
  std::filesystem::remove_all(dir);
  return dir.string();
}

// The CSR of n vertices and the edges src[i]-dst[i], stored both ways (graph::build_csr).
inline graph::Csr undirected(int64_t n, std::vector<int64_t> src, std::vector<int64_t> dst) {
  graph::EdgeList edges;
  edges.src = std::move(src);
  edges.dst = std::move(dst);
  return graph::build_csr(n, edges);
}

// A graph file that does not exist: what write_partition records as the partition's source.
inline partition::SourceFile fake_source() {
  return partition::SourceFile{"in-memory.h5", "/nonexistent/in-memory.h5", "fnv1a64:0", 0};
}

// `halogen partition` of `g` into `dir` with the method, part count, seed and balance given.
inline partition::PartitionResult write_partition_dir(
    const graph::Graph& g, const std::string& dir, partition::Method method, int32_t parts, uint64_t seed,
    partition::Balance balance = partition::Balance::all,
    partition::VertexOrder order = partition::VertexOrder::rcm) {
  partition::PartitionRequest request;
  request.output_dir = dir;
  request.options.method = method;
  request.options.num_parts = parts;
  request.options.seed = seed;
  request.options.balance = balance;
  request.options.vertex_order = order;
  request.command = "test";
  partition::PhaseLog phases;
  return partition::write_partition(g, fake_source(), request, phases);
}

}  // namespace halogen::test
