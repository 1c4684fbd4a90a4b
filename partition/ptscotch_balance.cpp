#include "partition/ptscotch_balance.h"

#include <metis.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/check.h"
#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/timer.h"
#include "partition/slice_comm.h"

namespace halogen::partition {

RebalanceReport rebalance_slices(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                                 const std::vector<int64_t>& train, int64_t num_edges, const AssignOptions& options,
                                 std::vector<int32_t>& part_local) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  const int64_t n_local = slice.num_rows();
  // balance_weights(graph, Balance::all) for the slice's rows.
  std::vector<std::string> names{"vertices"};
  if (num_edges > 0) names.push_back("edges");
  if (!train.empty()) names.push_back("train");
  const int32_t ncon = static_cast<int32_t>(names.size());
  std::vector<int64_t> weight(static_cast<size_t>(n_local) * ncon, 0);
  for (int64_t i = 0; i < n_local; ++i)
    for (int32_t c = 0; c < ncon; ++c)
      weight[i * ncon + c] = names[c] == "vertices" ? 1
                             : names[c] == "edges"  ? slice.row_end(i) - slice.row_begin(i)
                                                    : std::binary_search(train.begin(), train.end(), slice.begin + i);
  // Parts of the remote neighbours, from the owners of their slices.
  const std::vector<int64_t> ghosts = slice_ghosts(slice);
  std::vector<int64_t> ghost_part =
      ask_owners(comm, ghosts, bounds, slice.begin, [&](int64_t i) -> int64_t { return part_local[i]; });
  // Where each entry's part is: the row's index in the slice (>= 0) or -1 - its index in `ghosts`; looked up
  // once, not in every round (int32: a slice's rows and ghosts are counted in int32 below).
  HALOGEN_USER_CHECK(n_local < (int64_t{1} << 31) && static_cast<int64_t>(ghosts.size()) < (int64_t{1} << 31),
                     "ptscotch rebalance: a process holds %lld rows and %zu remote neighbours, more than 2^31; use "
                     "more processes",
                     static_cast<long long>(n_local), ghosts.size());
  std::vector<int32_t> entry_at(slice.indices.size());
  for (size_t e = 0; e < slice.indices.size(); ++e) {
    const int64_t v = slice.indices[e];
    entry_at[e] = v >= slice.begin && v < slice.end
                      ? static_cast<int32_t>(v - slice.begin)
                      : static_cast<int32_t>(-1 - (std::lower_bound(ghosts.begin(), ghosts.end(), v) - ghosts.begin()));
  }
  auto entry_part = [&](size_t e) -> int32_t {
    const int32_t at = entry_at[e];
    return at >= 0 ? part_local[at] : static_cast<int32_t>(ghost_part[-1 - at]);
  };
  const std::vector<double> fractions = part_fractions(options);
  const int32_t parts = options.num_parts;
  auto global_table = [&] {
    PartLoadTable table;
    table.ncon = ncon;
    table.load.assign(static_cast<size_t>(parts) * ncon, 0);
    table.total.assign(static_cast<size_t>(ncon), 0);
    for (int64_t i = 0; i < n_local; ++i)
      for (int32_t c = 0; c < ncon; ++c) {
        table.load[part_local[i] * ncon + c] += weight[i * ncon + c];
        table.total[c] += weight[i * ncon + c];
      }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, table.load.data(), static_cast<int>(table.load.size()), MPI_INT64_T,
                            MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, table.total.data(), ncon, MPI_INT64_T, MPI_SUM, comm));
    return table;
  };
  RebalanceReport report;
  report.max_load_before = report.max_load_after = max_relative_load(global_table(), fractions);
  if (parts <= 1) return report;
  constexpr int kWords = 5 + kMaxBalanceConstraints;  // vertex, from, to, gain, delta bits, weights
  std::vector<RebalanceMove> proposals;
  // One round of a RebalanceRound or RefineRound over the slices; returns the moves made (on process 0 with
  // their gains; elsewhere only the count is meaningful).
  auto run_round = [&](auto& round) {
    proposals.clear();
    for (int64_t i = 0; i < n_local; ++i) {
      const int64_t* w = &weight[i * ncon];
      const int64_t v = slice.begin + i;
      if (!round.gives(part_local[i], w)) continue;
      for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e)
        if (slice.indices[e] != v) round.neighbour(entry_part(static_cast<size_t>(e)));
      round.propose(v, part_local[i], w, proposals);
    }
    std::vector<int64_t> send(proposals.size() * kWords);
    for (size_t k = 0; k < proposals.size(); ++k) {
      const RebalanceMove& m = proposals[k];
      int64_t* out = &send[k * kWords];
      out[0] = m.vertex, out[1] = m.from, out[2] = m.to, out[3] = m.gain;
      std::memcpy(&out[4], &m.delta, sizeof(double));
      std::copy(m.weight.begin(), m.weight.end(), out + 5);
    }
    std::vector<int64_t> send_offsets(size + 1, static_cast<int64_t>(send.size())), gathered_offsets;
    send_offsets[0] = 0;
    const std::vector<int64_t> gathered = exchange(comm, send, send_offsets, &gathered_offsets);  // all to 0
    std::vector<RebalanceMove> applied;
    std::vector<int64_t> made;  // (vertex, to) of the moves made
    if (rank == 0) {
      std::vector<RebalanceMove> all(gathered.size() / kWords);
      for (size_t k = 0; k < all.size(); ++k) {
        const int64_t* in = &gathered[k * kWords];
        RebalanceMove& m = all[k];
        m.vertex = in[0], m.from = static_cast<int32_t>(in[1]), m.to = static_cast<int32_t>(in[2]), m.gain = in[3];
        std::memcpy(&m.delta, &in[4], sizeof(double));
        std::copy(in + 5, in + kWords, m.weight.begin());
      }
      applied = round.choose(std::move(all));
      for (const RebalanceMove& m : applied) {
        made.push_back(m.vertex);
        made.push_back(m.to);
      }
    }
    broadcast_words(comm, made);
    for (size_t k = 0; k < made.size(); k += 2) {
      const int64_t v = made[k];
      const int32_t to = static_cast<int32_t>(made[k + 1]);
      if (v >= slice.begin && v < slice.end) {
        part_local[v - slice.begin] = to;
      } else {
        const auto at = std::lower_bound(ghosts.begin(), ghosts.end(), v);
        if (at != ghosts.end() && *at == v) ghost_part[at - ghosts.begin()] = to;
      }
    }
    if (rank != 0) applied.resize(made.size() / 2);
    return applied;
  };
  int32_t rounds = 0;
  Stopwatch watch;
  for (int32_t round_number = 0; round_number < kMaxRebalanceRounds && report.max_load_before > options.imbalance;
       ++round_number) {
    RebalanceRound round(global_table(), fractions, options.imbalance);  // the same on every process
    if (!round.any_overloaded()) break;
    const int64_t made = static_cast<int64_t>(run_round(round).size());
    report.moved += made;
    ++rounds;
    if (made == 0) break;  // no move helps any more
  }
  report.max_load_after = max_relative_load(global_table(), fractions);
  if (rank == 0 && report.moved > 0) {
    std::string joined;
    for (const std::string& name : names) joined += (joined.empty() ? "" : ", ") + name;
    log::info(strformat("rebalance (%s, distributed): %lld moves in %d rounds, %.2f s, largest part load / target "
                        "%.3f -> %.3f",
                        joined.c_str(), static_cast<long long>(report.moved), rounds, watch.seconds(),
                        report.max_load_before, report.max_load_after));
  }
  // Then win back cut within the bound (refine_loads's rounds, the same moves whatever K).
  {
    RefineReport refined;
    Stopwatch refine_watch;
    int32_t idle = 0;
    for (int32_t round_number = 0; round_number < kMaxRefineRounds && idle < RefineRound::cycle(parts);
         ++round_number) {
      RefineRound round(global_table(), fractions, options.imbalance, round_number);
      const std::vector<RebalanceMove> applied = run_round(round);
      for (const RebalanceMove& m : applied) refined.gained += m.gain;
      refined.moved += static_cast<int64_t>(applied.size());
      ++refined.rounds;
      idle = applied.empty() ? idle + 1 : 0;
    }
    if (rank == 0)
      log::info(strformat("refine (distributed): %lld moves in %d rounds, %.2f s, %lld cut edges fewer",
                          static_cast<long long>(refined.moved), refined.rounds, refine_watch.seconds(),
                          static_cast<long long>(refined.gained)));
  }
  return report;
}

int64_t slice_cut_entries(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                          const std::vector<int32_t>& part_local) {
  const std::vector<int64_t> ghosts = slice_ghosts(slice);
  const std::vector<int64_t> ghost_part =
      ask_owners(comm, ghosts, bounds, slice.begin, [&](int64_t i) -> int64_t { return part_local[i]; });
  int64_t cut = 0;
  for (int64_t i = 0; i < slice.num_rows(); ++i)
    for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e) {
      const int64_t v = slice.indices[e];
      const int64_t part = v >= slice.begin && v < slice.end
                               ? part_local[v - slice.begin]
                               : ghost_part[std::lower_bound(ghosts.begin(), ghosts.end(), v) - ghosts.begin()];
      cut += part != part_local[i];
    }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &cut, 1, MPI_INT64_T, MPI_SUM, comm));
  return cut;
}

std::vector<int32_t> merge_fine_parts(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                                      const std::vector<int64_t>& train, int64_t num_edges, int32_t fine_parts,
                                      const AssignOptions& options, const std::vector<int32_t>& fine_local) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const int64_t n_local = slice.num_rows();
  const int32_t ncon = 1 + (num_edges > 0) + !train.empty(), F = fine_parts;
  std::vector<int64_t> weight(static_cast<size_t>(F) * ncon, 0);  // (F, ncon)
  for (int64_t i = 0; i < n_local; ++i) {
    int64_t* w = &weight[static_cast<size_t>(fine_local[i]) * ncon];
    w[0] += 1;
    if (num_edges > 0) w[1] += slice.row_end(i) - slice.row_begin(i);
    if (!train.empty()) w[ncon - 1] += std::binary_search(train.begin(), train.end(), slice.begin + i);
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, weight.data(), static_cast<int>(weight.size()), MPI_INT64_T, MPI_SUM, comm));
  // Entries between fine parts: (F x F) counts, summed on process 0 (F <= kMaxFineParts: at most 8 MiB).
  const std::vector<int64_t> ghosts = slice_ghosts(slice);
  const std::vector<int64_t> ghost_fine =
      ask_owners(comm, ghosts, bounds, slice.begin, [&](int64_t i) -> int64_t { return fine_local[i]; });
  std::vector<int64_t> edge(static_cast<size_t>(F) * F, 0);
  for (int64_t i = 0; i < n_local; ++i)
    for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e) {
      const int64_t v = slice.indices[e];
      const int64_t b = v >= slice.begin && v < slice.end
                            ? fine_local[v - slice.begin]
                            : ghost_fine[std::lower_bound(ghosts.begin(), ghosts.end(), v) - ghosts.begin()];
      ++edge[int64_t{fine_local[i]} * F + b];
    }
  MPI_CHECK(MPI_Reduce(rank == 0 ? MPI_IN_PLACE : edge.data(), edge.data(), static_cast<int>(edge.size()),
                       MPI_INT64_T, MPI_SUM, 0, comm));
  std::vector<int64_t> map(static_cast<size_t>(F), 0);
  collectively(comm, [&] {
    if (rank != 0) return;
    // METIS takes idx_t (32-bit) weights: every constraint and the edge weights are scaled to fit.
    constexpr int64_t kLimit = int64_t{1} << 28;
    std::vector<idx_t> vwgt(weight.size()), xadj(1, 0), adjncy, adjwgt;
    for (int32_t c = 0; c < ncon; ++c) {
      int64_t total = 0;
      for (int32_t f = 0; f < F; ++f) total += weight[f * ncon + c];
      const int64_t scale = total / kLimit + 1;
      for (int32_t f = 0; f < F; ++f) vwgt[f * ncon + c] = static_cast<idx_t>(weight[f * ncon + c] / scale);
    }
    const int64_t edge_scale = std::accumulate(edge.begin(), edge.end(), int64_t{0}) / kLimit + 1;
    for (int32_t a = 0; a < F; ++a) {
      for (int32_t b = 0; b < F; ++b) {
        // Symmetric: the graph is undirected, so a-b entries equal b-a ones; both are kept, summed.
        const int64_t w = edge[int64_t{a} * F + b] + edge[int64_t{b} * F + a];
        if (a == b || w == 0) continue;
        adjncy.push_back(b);
        adjwgt.push_back(static_cast<idx_t>(std::max<int64_t>(1, w / edge_scale)));
      }
      xadj.push_back(static_cast<idx_t>(adjncy.size()));
    }
    const std::vector<double> fractions = part_fractions(options);
    std::vector<real_t> tpwgts(static_cast<size_t>(options.num_parts) * ncon);
    for (int32_t p = 0; p < options.num_parts; ++p)
      for (int32_t c = 0; c < ncon; ++c) tpwgts[p * ncon + c] = static_cast<real_t>(fractions[p]);
    // METIS refuses a bound of 1.0 (--imbalance 1.0): the tightest it takes, as metis_ufactor does.
    std::vector<real_t> ubvec(static_cast<size_t>(ncon), static_cast<real_t>(std::max(options.imbalance, 1.001)));
    idx_t metis_options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(metis_options);
    metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed % 1000003);
    metis_options[METIS_OPTION_NUMBERING] = 0;
    idx_t nvtxs = F, metis_ncon = ncon, nparts = options.num_parts, objval = 0;
    std::vector<idx_t> part(static_cast<size_t>(F), 0);
    const int status = METIS_PartGraphKway(&nvtxs, &metis_ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr,
                                           adjwgt.data(), &nparts, tpwgts.data(), ubvec.data(), metis_options,
                                           &objval, part.data());
    HALOGEN_USER_CHECK(status == METIS_OK, "--method ptscotch: METIS failed (status %d) on the quotient of %d fine "
                       "parts", status, F);
    for (int32_t f = 0; f < F; ++f) map[f] = part[f];
  });
  broadcast_words(comm, map);
  std::vector<int32_t> part_local(static_cast<size_t>(n_local));
  for (int64_t i = 0; i < n_local; ++i) part_local[i] = static_cast<int32_t>(map[fine_local[i]]);
  return part_local;
}

// At most this many fine parts (P <= 128): the quotient's F x F edge counts stay within 8 MiB per process.
constexpr int64_t kMaxFineParts = 1024;
// The fine route runs when the direct rebalance grows the cut by more than this factor: it doubles PT-Scotch's
// time, and on RMAT (rebalance costs ~1% of the cut) it never won (docs/partition.md).
constexpr double kFineRouteCutGrowth = 1.05;
// Fine parts per part: 8 left pieces small enough for METIS to balance 3 constraints on the quotient and few
// enough (8P vertices) that process 0 partitions it in milliseconds.
constexpr int32_t kFinePartsPerPart = 8;

std::string balance_ptscotch(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                             const std::vector<int64_t>& train, int64_t num_edges, const AssignOptions& options,
                             const std::function<std::vector<int32_t>(const AssignOptions&)>& partition_into,
                             std::vector<int32_t>& part_local) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const int32_t P = options.num_parts;
  const int64_t cut_scotch = slice_cut_entries(comm, slice, bounds, part_local);
  rebalance_slices(comm, slice, bounds, train, num_edges, options, part_local);
  const int64_t cut_direct = slice_cut_entries(comm, slice, bounds, part_local);
  int64_t num_nodes = slice.num_rows();
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &num_nodes, 1, MPI_INT64_T, MPI_SUM, comm));
  const int64_t fine_parts = int64_t{kFinePartsPerPart} * P;
  if (P == 1 || static_cast<double>(cut_direct) <= kFineRouteCutGrowth * static_cast<double>(cut_scotch) ||
      fine_parts > num_nodes || fine_parts > kMaxFineParts)
    return "direct";
  Stopwatch watch;
  AssignOptions fine_options = options;
  fine_options.num_parts = static_cast<int32_t>(fine_parts);
  fine_options.part_weights.clear();
  std::vector<int32_t> fine_local;
  collectively(comm, [&] { fine_local = partition_into(fine_options); });
  std::vector<int32_t> merged = merge_fine_parts(comm, slice, bounds, train, num_edges,
                                                 static_cast<int32_t>(fine_parts), options, fine_local);
  rebalance_slices(comm, slice, bounds, train, num_edges, options, merged);
  const int64_t cut_fine = slice_cut_entries(comm, slice, bounds, merged);
  const bool fine_wins = cut_fine < cut_direct;
  if (rank == 0)
    log::info(strformat("balance: the rebalance grew the cut %.2fx (%lld -> %lld entries); %lld fine parts merged "
                        "by METIS + rebalance: %lld entries in %.2f s; kept %s",
                        static_cast<double>(cut_direct) / std::max<int64_t>(1, cut_scotch),
                        static_cast<long long>(cut_scotch), static_cast<long long>(cut_direct),
                        static_cast<long long>(fine_parts), static_cast<long long>(cut_fine), watch.seconds(),
                        fine_wins ? "the fine route" : "the direct route"));
  if (!fine_wins) return "direct";
  part_local = std::move(merged);
  return "fine";
}

}  // namespace halogen::partition
