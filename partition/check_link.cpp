#include "partition/check_link.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace halogen::partition {

namespace {

[[noreturn]] void violated(const std::string& file, const std::string& group, const std::string& what) {
  throw UserError(file + ": invariant violated: " + group + ": " + what);
}

std::string link_group(size_t s) {
  char name[32];
  std::snprintf(name, sizeof(name), "/link/%05zu", s);
  return name;
}

// Row u of `next` without u, ascending, distinct (written here again, independently of the builder).
std::vector<int64_t> neighbours_of(const graph::Csr& next, int64_t u) {
  std::vector<int64_t> out(next.indices.begin() + next.indptr[u], next.indices.begin() + next.indptr[u + 1]);
  out.erase(std::remove(out.begin(), out.end(), u), out.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

void check_shard_link_steps(const graph::Shard& s, const graph::Graph& g, const std::vector<int32_t>& assignment,
                            const std::string& file) {
  if (s.link_negatives == 0) return;
  const size_t steps = g.snapshots.size() < 2 ? 0 : g.snapshots.size() - 1;
  if (s.link_steps.size() != steps)
    violated(file, "/link",
             std::to_string(s.link_steps.size()) + " steps, the graph has " + std::to_string(steps) +
                 " (snapshots - 1)");
  const int64_t n_own = s.num_owned();
  const int32_t p = s.part;
  for (size_t t = 0; t < steps; ++t) {
    const graph::Csr& next = g.snapshots[t + 1];
    const graph::ShardLinkStep& step = s.link_steps[t];
    const std::string group = link_group(t);
    // Fetched rows: owned by the part whose group holds them, never by this part.
    for (int32_t q = 0; q < s.num_parts; ++q)
      for (int64_t f = step.plan.recv_offsets[q]; f < step.plan.recv_offsets[q + 1]; ++f)
        if (assignment[step.fetched_gid[f]] != q || q == p)
          violated(file, group,
                   "fetch/gid[" + std::to_string(f) + "] = vertex " + std::to_string(step.fetched_gid[f]) +
                       " is owned by part " + std::to_string(assignment[step.fetched_gid[f]]) +
                       ", but sits in the group of part " + std::to_string(q));
    auto gid_of = [&](int32_t row) { return row < n_own ? s.owned_gid[row] : step.fetched_gid[row - n_own]; };
    std::vector<int32_t> sources;
    std::vector<int64_t> remote;  // non-owned endpoints
    size_t i = 0;                 // position in step.sources
    for (int64_t local = 0; local < n_own; ++local) {
      const int64_t u = s.owned_gid[local];
      const std::vector<int64_t> positives = neighbours_of(next, u);
      if (positives.empty()) continue;
      sources.push_back(static_cast<int32_t>(local));
      if (i >= step.sources.size() || step.sources[i] != local)
        violated(file, group, "sources: vertex " + std::to_string(u) + " has neighbours in snapshot " +
                                  std::to_string(t + 1) + " but is not source " + std::to_string(i));
      const int64_t begin = step.source_offsets[i], end = step.source_offsets[i + 1];
      const int64_t count = static_cast<int64_t>(positives.size());
      if (end - begin < count || end - begin > count * (1 + s.link_negatives))
        violated(file, group,
                 "source " + std::to_string(i) + " (vertex " + std::to_string(u) + ") has " +
                     std::to_string(end - begin) + " pairs for " + std::to_string(count) + " positives");
      for (int64_t k = begin; k < end; ++k) {
        const int64_t v = gid_of(step.target[k]);
        const bool positive = k - begin < count;
        if (step.label[k] != (positive ? 1 : 0) || (positive && v != positives[k - begin]))
          violated(file, group,
                   "pair " + std::to_string(k) + " (" + std::to_string(u) + ", " + std::to_string(v) +
                       "): expected " + (positive ? "positive " + std::to_string(positives[k - begin])
                                                  : std::string("a sampled negative")));
        if (!positive && (v == u || std::binary_search(positives.begin(), positives.end(), v)))
          violated(file, group,
                   "negative pair " + std::to_string(k) + " (" + std::to_string(u) + ", " + std::to_string(v) +
                       ") is an edge of snapshot " + std::to_string(t + 1) + " or a self pair");
        if (assignment[v] != p) remote.push_back(v);
      }
      ++i;
    }
    if (sources != step.sources)
      violated(file, group,
               "sources: " + std::to_string(step.sources.size()) + " stored, " + std::to_string(sources.size()) +
                   " owned vertices have neighbours in snapshot " + std::to_string(t + 1));
    std::sort(remote.begin(), remote.end());
    remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
    std::vector<int64_t> fetched = step.fetched_gid;
    std::sort(fetched.begin(), fetched.end());
    if (fetched != remote)
      violated(file, group,
               "fetch/gid is not the set of non-owned endpoints (" + std::to_string(fetched.size()) + " rows, " +
                   std::to_string(remote.size()) + " expected)");
  }
}

LinkFetchPlans keep_link_fetch_plans(const graph::Shard& shard) {
  LinkFetchPlans kept;
  kept.owned_gid = shard.owned_gid;
  for (const graph::ShardLinkStep& step : shard.link_steps) {
    kept.fetched_gid.push_back(step.fetched_gid);
    kept.plan.push_back(step.plan);
  }
  return kept;
}

void check_link_sends(const std::vector<LinkFetchPlans>& parts, const std::vector<std::string>& files) {
  const int32_t count = static_cast<int32_t>(parts.size());
  for (int32_t q = 0; q < count; ++q) {
    const LinkFetchPlans& sender = parts[q];
    for (int32_t r = 0; r < count; ++r) {
      const LinkFetchPlans& receiver = parts[r];
      if (sender.plan.size() != receiver.plan.size())
        violated(files[q], "/link", std::to_string(sender.plan.size()) + " steps, part " + std::to_string(r) +
                                        " has " + std::to_string(receiver.plan.size()));
      for (size_t t = 0; t < sender.plan.size(); ++t) {
        const graph::HaloPlan& send = sender.plan[t];
        const graph::HaloPlan& recv = receiver.plan[t];
        const int64_t sent = send.send_offsets[r + 1] - send.send_offsets[r];
        const int64_t expected = recv.recv_offsets[q + 1] - recv.recv_offsets[q];
        if (sent != expected)
          violated(files[q], link_group(t),
                   "sends " + std::to_string(sent) + " rows to part " + std::to_string(r) + ", which fetches " +
                       std::to_string(expected));
        for (int64_t k = 0; k < sent; ++k) {
          const int64_t gid = sender.owned_gid[send.send_idx[send.send_offsets[r] + k]];
          if (gid != receiver.fetched_gid[t][recv.recv_offsets[q] + k])
            violated(files[q], link_group(t),
                     "send row " + std::to_string(k) + " to part " + std::to_string(r) + " is vertex " +
                         std::to_string(gid) + ", not part " + std::to_string(r) + "'s fetched row from part " +
                         std::to_string(q));
        }
      }
    }
  }
}

}  // namespace halogen::partition
