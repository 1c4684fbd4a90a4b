#include "partition/link_steps.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/rng.h"

namespace halogen::partition {

void link_positives(const graph::Csr& next, int64_t u, std::vector<int64_t>& out) {
  out.clear();
  for (int64_t e = next.indptr[u]; e < next.indptr[u + 1]; ++e)
    if (next.indices[e] != u) out.push_back(next.indices[e]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

LinkNegatives sample_link_negatives(const graph::Csr& next, int64_t step, int64_t negatives, uint64_t seed) {
  HALOGEN_ASSERT(negatives >= 1, "negatives %lld", static_cast<long long>(negatives));
  const int64_t n = next.num_rows;
  constexpr int64_t kFailed = -1;  // a slot whose 32 draws all hit u or a neighbour
  // Slots first (negatives x positives per vertex), filled in parallel, then the failed slots dropped.
  std::vector<int64_t> slots(static_cast<size_t>(n) + 1, 0);
  std::vector<int64_t> positives;
  for (int64_t u = 0; u < n; ++u) {
    link_positives(next, u, positives);
    slots[u + 1] = slots[u] + negatives * static_cast<int64_t>(positives.size());
  }
  std::vector<int64_t> drawn(static_cast<size_t>(slots[n]), kFailed);
#pragma omp parallel
  {
    std::vector<int64_t> neighbours;
#pragma omp for schedule(dynamic, 256)
    for (int64_t u = 0; u < n; ++u) {
      if (slots[u + 1] == slots[u]) continue;
      link_positives(next, u, neighbours);
      const uint64_t stream = rng::stream_id(rng::kNegativeSampling, static_cast<uint32_t>(step),
                                             static_cast<uint32_t>(u), static_cast<uint32_t>(u >> 32));
      uint64_t draw = 0;
      for (int64_t j = slots[u]; j < slots[u + 1]; ++j) {
        for (int attempt = 0; attempt < 32; ++attempt) {
          const rng::Philox4 r = rng::bits(seed, stream, draw);
          const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
          ++draw;
          const int64_t w = static_cast<int64_t>(bits % static_cast<uint64_t>(n));
          if (w == u || std::binary_search(neighbours.begin(), neighbours.end(), w)) continue;
          drawn[j] = w;
          break;
        }
      }
    }
  }
  LinkNegatives out;
  out.offsets.assign(static_cast<size_t>(n) + 1, 0);
  out.gid.reserve(drawn.size());
  for (int64_t u = 0; u < n; ++u) {
    for (int64_t j = slots[u]; j < slots[u + 1]; ++j)
      if (drawn[j] != kFailed) out.gid.push_back(drawn[j]);
    out.offsets[u + 1] = static_cast<int64_t>(out.gid.size());
  }
  return out;
}

graph::ShardLinkStep build_shard_link_step(const graph::Csr& next, const LinkNegatives& sampled,
                                           const HaloPlan& plan, const graph::Shard& shard) {
  const int32_t part = shard.part, parts = plan.num_parts;
  const int64_t n = next.num_rows, n_own = shard.num_owned();
  HALOGEN_ASSERT(n == static_cast<int64_t>(plan.part_of.size()) &&
                     static_cast<int64_t>(sampled.offsets.size()) == n + 1,
                 "step has %lld rows, plan %zu", static_cast<long long>(n), plan.part_of.size());
  graph::ShardLinkStep s;
  // Pairs of the owned sources, in global ids for now.
  std::vector<int64_t> positives, endpoint_gid;
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t u = shard.owned_gid[i];
    link_positives(next, u, positives);
    if (positives.empty()) continue;
    s.sources.push_back(static_cast<int32_t>(i));
    for (int64_t v : positives) {
      endpoint_gid.push_back(v);
      s.label.push_back(1);
    }
    for (int64_t k = sampled.offsets[u]; k < sampled.offsets[u + 1]; ++k) {
      endpoint_gid.push_back(sampled.gid[k]);
      s.label.push_back(0);
    }
    s.source_offsets.push_back(static_cast<int64_t>(endpoint_gid.size()));
  }
  // Fetched rows: the non-owned endpoints, grouped by owner, ascending within a group.
  auto by_owner = [&](int64_t a, int64_t b) {
    return plan.part_of[a] != plan.part_of[b] ? plan.part_of[a] < plan.part_of[b] : a < b;
  };
  for (int64_t v : endpoint_gid)
    if (plan.part_of[v] != part) s.fetched_gid.push_back(v);
  std::sort(s.fetched_gid.begin(), s.fetched_gid.end(), by_owner);
  s.fetched_gid.erase(std::unique(s.fetched_gid.begin(), s.fetched_gid.end()), s.fetched_gid.end());
  HALOGEN_USER_CHECK(n_own + s.num_fetched() <= std::numeric_limits<int32_t>::max(),
                     "part %d: owned + fetched link rows exceed int32 ids", part);
  s.plan.recv_offsets.assign(parts + 1, 0);
  for (int64_t v : s.fetched_gid) ++s.plan.recv_offsets[plan.part_of[v] + 1];
  for (int32_t q = 0; q < parts; ++q) s.plan.recv_offsets[q + 1] += s.plan.recv_offsets[q];
  s.target.reserve(endpoint_gid.size());
  for (int64_t v : endpoint_gid) {
    if (plan.part_of[v] == part) {
      s.target.push_back(plan.local_of[v]);
    } else {
      const auto it = std::lower_bound(s.fetched_gid.begin(), s.fetched_gid.end(), v, by_owner);
      s.target.push_back(static_cast<int32_t>(n_own + (it - s.fetched_gid.begin())));
    }
  }
  // Sends: to part q, the owned endpoints of q's sources' pairs, ascending (= q's fetch order from here).
  SendMarks sends(parts, n_own);
  auto want = [&](int32_t q, int64_t v) {
    if (plan.part_of[v] == part) sends.mark(q, plan.local_of[v]);
  };
  for (int64_t u = 0; u < n; ++u) {
    const int32_t q = plan.part_of[u];
    if (q == part) continue;
    bool has_positive = false;
    for (int64_t e = next.indptr[u]; e < next.indptr[u + 1]; ++e) {
      if (next.indices[e] == u) continue;
      has_positive = true;
      want(q, next.indices[e]);
    }
    if (!has_positive) continue;  // no pairs (and no negatives were drawn)
    for (int64_t k = sampled.offsets[u]; k < sampled.offsets[u + 1]; ++k) want(q, sampled.gid[k]);
  }
  sends.fill_send(s.plan);
  return s;
}

std::vector<LinkNegatives> sample_all_link_negatives(const graph::Graph& graph, int64_t negatives, uint64_t seed) {
  std::vector<LinkNegatives> out;
  for (size_t s = 0; s + 1 < graph.snapshots.size(); ++s)
    out.push_back(sample_link_negatives(graph.snapshots[s + 1], static_cast<int64_t>(s), negatives, seed));
  return out;
}

std::vector<graph::ShardLinkStep> build_shard_link_steps(const graph::Graph& graph,
                                                         const std::vector<LinkNegatives>& sampled,
                                                         const HaloPlan& plan, const graph::Shard& shard) {
  HALOGEN_ASSERT(sampled.size() + 1 == graph.snapshots.size() || (graph.snapshots.size() < 2 && sampled.empty()),
                 "%zu sampled steps for %zu snapshots", sampled.size(), graph.snapshots.size());
  std::vector<graph::ShardLinkStep> out;
  out.reserve(sampled.size());
  for (size_t s = 0; s < sampled.size(); ++s)
    out.push_back(build_shard_link_step(graph.snapshots[s + 1], sampled[s], plan, shard));
  return out;
}

}  // namespace halogen::partition
