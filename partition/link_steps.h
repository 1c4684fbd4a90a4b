#pragma once
// Link-prediction steps of a dynamic graph, built at partition time (docs/dynamic.md, "Link prediction"):
// step s scores, with the embeddings of snapshot s, the pairs of snapshot s+1. For every vertex u with at
// least one neighbour v != u in G_{s+1}: its positives are those neighbours (ascending gid), and its
// negatives are `negatives` draws per positive of a vertex w != u that is not a neighbour of u in G_{s+1},
// uniform over [0, N), from the Philox stream (kNegativeSampling, s, u) under the partition's seed (a draw
// that hits u or a neighbour is redrawn, up to 32 times, then that negative is skipped). Nothing depends on
// the number of parts, so P ranks score exactly the pairs of 1 rank. Each shard gets, per step, its sources'
// pairs and the plan (graph::HaloPlan) that fetches the rows of the non-owned endpoints (graph/shard.h,
// ShardLinkStep).
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/shard.h"
#include "partition/halo_plan.h"

namespace halogen::partition {

// The sampled negatives of every vertex at one step (all parts share them): vertex u's are
// gid[offsets[u] .. offsets[u+1]), in draw order.
struct LinkNegatives {
  std::vector<int64_t> offsets{0};  // (N+1)
  std::vector<int64_t> gid;         // (total negatives)
};

// u's positives at a step: row u of `next` without u, ascending, distinct. Overwrites `out`.
void link_positives(const graph::Csr& next, int64_t u, std::vector<int64_t>& out);

// Negatives of every vertex for step `step` (next = G_{step+1}); `negatives` >= 1 per positive. OpenMP over
// vertices; the result does not depend on the thread count.
LinkNegatives sample_link_negatives(const graph::Csr& next, int64_t step, int64_t negatives, uint64_t seed);

// Part `shard.part`'s pairs and fetch plan for one step (next = G_{step+1}, `sampled` its negatives). The
// send side needs the pairs of other parts that read this part's rows, so every vertex's pairs are scanned:
// O(N + pairs) per part and step.
graph::ShardLinkStep build_shard_link_step(const graph::Csr& next, const LinkNegatives& sampled,
                                           const HaloPlan& plan, const graph::Shard& shard);

// Negatives for every step of `graph` (snapshots - 1 of them; none with fewer than 2 snapshots).
std::vector<LinkNegatives> sample_all_link_negatives(const graph::Graph& graph, int64_t negatives, uint64_t seed);

// Every step of `graph` for `shard` (sampled = sample_all_link_negatives(graph, ...)).
std::vector<graph::ShardLinkStep> build_shard_link_steps(const graph::Graph& graph,
                                                         const std::vector<LinkNegatives>& sampled,
                                                         const HaloPlan& plan, const graph::Shard& shard);

}  // namespace halogen::partition
