#pragma once
// The order of a shard's owned vertices (`halogen partition --vertex-order`). Local ids index every
// per-vertex array of a rank (features, activations, the local CSR's rows and owned columns), so their order
// decides how far apart in memory the rows an SpMM row gathers lie. `gid` keeps ascending global ids (the
// order of the graph file, local only if the file's numbering is); `rcm` renumbers each part by reverse
// Cuthill-McKee on its induced subgraph, so neighbours get nearby local ids whatever the file's numbering.
//
// Only the owned vertices are renumbered. The halo keeps its order (grouped by owner part, ascending gid
// within a group, as the format requires and readers check), so a part's halo does not depend on how its
// neighbours ordered their vertices, and /send/idx (the owned rows part q receives, in q's halo order) only
// has its values remapped: every shard is reordered alone, by the process that builds it (PT-Scotch's too).
#include <cstdint>
#include <string>
#include <vector>

#include "graph/shard.h"

namespace halogen::partition {

enum class VertexOrder { gid, rcm };

// "gid" | "rcm"; UserError naming --vertex-order otherwise.
VertexOrder parse_vertex_order(const std::string& text);
const char* vertex_order_name(VertexOrder order);

// Reverse Cuthill-McKee order of the graph on [0, n) made of the entries (i, j) of a CSR (n rows, indptr
// (n+1)) with j < n, j != i, taken in both directions (directed graphs too; columns >= n are ignored, so a
// shard's local CSR gives its owned-owned subgraph). Per connected component, in the order of each
// component's smallest vertex: a breadth-first search from a pseudo-peripheral vertex (George-Liu, started at
// the component's vertex of least degree), neighbours visited by ascending degree, then the component's
// sequence reversed. Every tie goes to the smaller id, so the order is a function of the graph alone. Returns
// order (n): order[new] = old, a permutation of [0, n).
std::vector<int32_t> rcm_order(int64_t n, const std::vector<int64_t>& indptr,
                               const std::vector<int32_t>& indices);

// Renumbers the shard's owned vertices: new local id k is old local id order[k]. Permutes every
// per-owned-vertex array (owned_gid, degree_owned, the CSR's rows, features, labels, targets and their
// offset/scale), maps owned columns (rows re-sorted, weights carried), /send/idx values and the splits
// (ascending again). The halo and its order are unchanged. The shard must have no snapshots or link steps
// (asserted): dynamic graphs keep gid.
void reorder_owned(graph::Shard& shard, const std::vector<int32_t>& order);

// `order` applied to a shard built in gid order: nothing for gid, rcm_order of its local CSR for rcm.
void apply_vertex_order(graph::Shard& shard, VertexOrder order);

// Bandwidth of the owned-owned part of a shard's local CSR: max |i - j| over entries (i, j), j < n_own. (What
// RCM reduces; exposed for tests and `bench spmm`.)
int64_t owned_bandwidth(const graph::Shard& shard);

}  // namespace halogen::partition
