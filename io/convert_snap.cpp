#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/snap_scan.h"

namespace halogen::io {

graph::Graph convert_snap(const ConvertOptions& options) {
  graph::EdgeList edges;
  int64_t max_id = -1, count = 0;
  // SNAP's "# Nodes: 4039 Edges: 88234" header, when there is one (-1 otherwise)
  const int64_t header_nodes = scan_snap(options.input, &max_id, &count, [&](int64_t src, int64_t dst) {
    edges.src.push_back(src);
    edges.dst.push_back(dst);
  });
  HALOGEN_USER_CHECK(!edges.src.empty(), "%s: no edges (an empty edge list would be a graph of 0 vertices)",
                     options.input.c_str());

  // The vertex set. When the header names N vertices and every id is below N, the ids are kept as they are
  // and the vertices no edge touches stay, isolated (SNAP lists only edges). Otherwise the sorted distinct
  // ids become 0..N-1 (a header whose count the ids contradict cannot say where the isolated vertices go).
  graph::Graph g;
  std::filesystem::path p(options.input);
  g.name = options.name.empty() ? p.stem().string() : options.name;
  g.directed = options.directed;
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  if (header_nodes > 0 && max_id < header_nodes) {
    g.num_nodes = header_nodes;
    g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);
    return g;
  }
  if (header_nodes > 0)
    log::warn(strformat(
        "%s: the header says %lld nodes but an edge names node %lld: ids are renumbered to the ones "
        "the edges use (vertices no edge touches are not kept)",
        options.input.c_str(), (long long)header_nodes, (long long)max_id));

  // Remap: the sorted distinct ids become 0..N-1.
  std::vector<int64_t> ids;
  ids.reserve(edges.src.size() * 2);
  ids.insert(ids.end(), edges.src.begin(), edges.src.end());
  ids.insert(ids.end(), edges.dst.begin(), edges.dst.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ids.shrink_to_fit();
  const int64_t num_edges = edges.size();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < num_edges; ++i) {
    edges.src[i] = std::lower_bound(ids.begin(), ids.end(), edges.src[i]) - ids.begin();
    edges.dst[i] = std::lower_bound(ids.begin(), ids.end(), edges.dst[i]) - ids.begin();
  }

  g.num_nodes = static_cast<int64_t>(ids.size());
  g.adjacency = graph::build_csr(g.num_nodes, std::move(edges), build);
  bool identity = true;
  for (int64_t i = 0; i < g.num_nodes && identity; ++i) identity = ids[i] == i;
  if (!identity) g.orig_id = std::move(ids);
  return g;
}

}  // namespace halogen::io
