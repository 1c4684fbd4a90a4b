#include "partition/check.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "io/part_file.h"
#include "partition/check_link.h"
#include "partition/check_snapshots.h"
#include "partition/halo_plan.h"

namespace halogen::partition {

namespace {

[[noreturn]] void violated(const std::string& file, const std::string& what) {
  throw UserError(file + ": invariant violated: " + what);
}

// Expected local split of a part: positions in owned_gid of the split members it owns, ascending.
std::vector<int64_t> expected_split(const std::vector<int64_t>& split, const std::vector<int32_t>& assignment,
                                    const std::vector<int64_t>& owned_gid, int32_t part) {
  // (gid, local id) by gid: owned_gid ascends only in gid vertex order.
  std::vector<std::pair<int64_t, int64_t>> by_gid(owned_gid.size());
  for (size_t i = 0; i < owned_gid.size(); ++i) by_gid[i] = {owned_gid[i], static_cast<int64_t>(i)};
  std::sort(by_gid.begin(), by_gid.end());
  std::vector<int64_t> local;
  for (int64_t v : split) {
    if (assignment[v] != part) continue;
    local.push_back(
        std::lower_bound(by_gid.begin(), by_gid.end(), std::pair<int64_t, int64_t>(v, -1))->second);
  }
  std::sort(local.begin(), local.end());
  return local;
}

struct PartPlan {
  std::vector<int64_t> owned_gid, halo_gid;
  graph::HaloPlan plan;
};

// Invariants 2, 4 and 5 for one shard.
void check_shard_against_graph(const graph::Shard& s, const graph::Graph& g,
                               const std::vector<int32_t>& assignment, const std::string& file) {
  const graph::Csr& adj = g.adjacency;
  const int64_t n_own = s.num_owned();
  const int32_t p = s.part;
  auto gid_of = [&](int64_t local) { return local < n_own ? s.owned_gid[local] : s.halo_gid[local - n_own]; };

  // 2. halo = remote neighbours, grouped by owner.
  std::vector<int64_t> remote;
  for (int64_t u : s.owned_gid)
    for (int64_t e = adj.indptr[u]; e < adj.indptr[u + 1]; ++e)
      if (assignment[adj.indices[e]] != p) remote.push_back(adj.indices[e]);
  std::sort(remote.begin(), remote.end());
  remote.erase(std::unique(remote.begin(), remote.end()), remote.end());
  std::vector<int64_t> halo_sorted = s.halo_gid;
  std::sort(halo_sorted.begin(), halo_sorted.end());
  if (halo_sorted != remote)
    violated(file, "/halo/gid is not the set of remote neighbours of the owned vertices (" +
                       std::to_string(s.num_halo()) + " halo rows, " + std::to_string(remote.size()) +
                       " expected)");
  for (int32_t q = 0; q < s.num_parts; ++q)
    for (int64_t h = s.plan.recv_offsets[q]; h < s.plan.recv_offsets[q + 1]; ++h)
      if (assignment[s.halo_gid[h]] != q)
        violated(file, "halo vertex " + std::to_string(s.halo_gid[h]) + " is in the group of part " +
                           std::to_string(q) + " but owned by part " +
                           std::to_string(assignment[s.halo_gid[h]]));

  // 4. local CSR = global rows with ids mapped; 5. degrees.
  if (adj.weighted() != !s.weight.empty()) violated(file, "/csr/weight present iff the graph is weighted");
  std::vector<std::pair<int64_t, float>> row;
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t u = s.owned_gid[i];
    row.clear();
    for (int64_t e = s.indptr[i]; e < s.indptr[i + 1]; ++e)
      row.emplace_back(gid_of(s.indices[e]), s.weight.empty() ? 0.0f : s.weight[e]);
    if (!local_row_equals_global(adj, u, row))
      violated(file, "local row " + std::to_string(i) + " differs from global row " + std::to_string(u));
    if (s.degree_owned[i] != degree_without_self_loop(adj, u))
      violated(file, "/degree/owned[" + std::to_string(i) + "] differs from the global degree of " +
                         std::to_string(u));
  }
  for (int64_t h = 0; h < s.num_halo(); ++h)
    if (s.degree_halo[h] != degree_without_self_loop(adj, s.halo_gid[h]))
      violated(file, "/degree/halo[" + std::to_string(h) + "] differs from the global degree of " +
                         std::to_string(s.halo_gid[h]));

  // 5. features, labels, targets, splits.
  const int64_t f = g.num_features;
  for (int64_t i = 0; i < n_own; ++i)
    if (!std::equal(s.features.begin() + i * f, s.features.begin() + (i + 1) * f,
                    g.features.begin() + s.owned_gid[i] * f))
      violated(file, "/node/feat row " + std::to_string(i) + " differs from global row " +
                         std::to_string(s.owned_gid[i]));
  if (g.labels.empty() != s.labels.empty()) violated(file, "/node/label present iff the graph has labels");
  for (int64_t i = 0; i < static_cast<int64_t>(s.labels.size()); ++i)
    if (s.labels[i] != g.labels[s.owned_gid[i]])
      violated(file, "/node/label[" + std::to_string(i) + "] differs from the global label");
  if (g.targets.empty() != s.targets.empty())
    violated(file, "/node/target present iff the graph has targets");
  if (!g.targets.empty()) {
    const int64_t steps = std::max<int64_t>(g.target_steps, 1);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t i = 0; i < n_own; ++i)
        if (s.targets[t * n_own + i] != g.targets[t * g.num_nodes + s.owned_gid[i]])
          violated(file, "/node/target differs from the global targets at local row " + std::to_string(i));
  }
  // The way back to the source's units: absent in partitions made before shards carried it, else the graph's.
  if (!s.target_scale.empty()) {
    if (g.preprocess.scale.empty())
      violated(file, "/node/label_scale present, but the graph file records no per-node standardisation");
    else
      for (int64_t i = 0; i < n_own; ++i)
        if (s.target_offset[i] != g.preprocess.offset[s.owned_gid[i]] ||
            s.target_scale[i] != g.preprocess.scale[s.owned_gid[i]])
          violated(file, "/node/label_offset or /node/label_scale differs from the graph's at local row " +
                             std::to_string(i));
  }
  if (s.train != expected_split(g.train, assignment, s.owned_gid, p)) violated(file, "/split/train differs");
  if (s.valid != expected_split(g.valid, assignment, s.owned_gid, p)) violated(file, "/split/valid differs");
  if (s.test != expected_split(g.test, assignment, s.owned_gid, p)) violated(file, "/split/test differs");
}

}  // namespace

void check_partition_dir(const std::string& dir, const graph::Graph& graph) {
  const io::PartitionMeta meta = io::read_partition_meta(dir);
  const std::string meta_file = (std::filesystem::path(dir) / "meta.json").string();
  if (meta.num_nodes != graph.num_nodes || meta.num_edges != graph.num_edges() ||
      meta.num_features != graph.num_features || meta.num_classes != graph.num_classes)
    violated(meta_file, "graph sizes (nodes, edges, features, classes) differ from the graph file");
  if (meta.num_train != static_cast<int64_t>(graph.train.size()))
    violated(meta_file, "num_train differs from the graph's training split");
  const int32_t parts = meta.num_parts;
  const std::string assignment_file = io::assignment_path(dir);
  const std::vector<int32_t> assignment = io::read_assignment(assignment_file, parts, graph.num_nodes);

  std::vector<int32_t> owner(graph.num_nodes, -1);
  std::vector<PartPlan> plans(parts);
  std::vector<LinkFetchPlans> link_plans(parts);
  std::vector<std::string> files(parts);
  for (int32_t p = 0; p < parts; ++p) {
    const std::string file = io::shard_path(dir, p);
    graph::Shard s = io::read_shard_file(file, p, meta);
    // 1. disjoint owned sets agreeing with the assignment.
    for (int64_t v : s.owned_gid) {
      if (owner[v] != -1)
        violated(file, "vertex " + std::to_string(v) + " is owned by parts " + std::to_string(owner[v]) +
                           " and " + std::to_string(p));
      owner[v] = p;
      if (assignment[v] != p)
        violated(file, "owns vertex " + std::to_string(v) + " which assignment.h5 gives to part " +
                           std::to_string(assignment[v]));
    }
    if (meta.part_halo[p] != s.num_halo())
      violated(meta_file, "parts[" + std::to_string(p) + "].halo differs");
    check_shard_against_graph(s, graph, assignment, file);
    check_shard_snapshots(s, graph, assignment, file);
    check_shard_link_steps(s, graph, assignment, file);
    link_plans[p] = keep_link_fetch_plans(s);
    files[p] = file;
    plans[p] = {std::move(s.owned_gid), std::move(s.halo_gid), std::move(s.plan)};
  }
  for (int64_t v = 0; v < graph.num_nodes; ++v)
    if (owner[v] == -1) violated(assignment_file, "vertex " + std::to_string(v) + " is owned by no shard");

  check_link_sends(link_plans, files);

  // 3. what q sends to r is r's halo group from q, in r's order.
  for (int32_t q = 0; q < parts; ++q) {
    for (int32_t r = 0; r < parts; ++r) {
      const PartPlan& sender = plans[q];
      const PartPlan& receiver = plans[r];
      const int64_t sent = sender.plan.send_offsets[r + 1] - sender.plan.send_offsets[r];
      const int64_t expected = receiver.plan.recv_offsets[q + 1] - receiver.plan.recv_offsets[q];
      if (sent != expected)
        violated(io::shard_path(dir, q), "sends " + std::to_string(sent) + " rows to part " +
                                             std::to_string(r) + ", which expects " +
                                             std::to_string(expected));
      for (int64_t k = 0; k < sent; ++k) {
        const int64_t gid = sender.owned_gid[sender.plan.send_idx[sender.plan.send_offsets[r] + k]];
        if (gid != receiver.halo_gid[receiver.plan.recv_offsets[q] + k])
          violated(io::shard_path(dir, q), "send row " + std::to_string(k) + " to part " + std::to_string(r) +
                                               " is vertex " + std::to_string(gid) + ", not part " +
                                               std::to_string(r) + "'s halo row from part " +
                                               std::to_string(q));
      }
    }
  }
}

}  // namespace halogen::partition
