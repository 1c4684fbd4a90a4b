#include "partition/ptscotch_partition.h"

#include <metis.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/check.h"
#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "partition/graph_slice.h"
#include "partition/halo_plan.h"
#include "partition/rebalance.h"

#ifdef HALOGEN_HAVE_PTSCOTCH
#include <ptscotch.h>
static_assert(sizeof(SCOTCH_Num) == sizeof(int64_t), "the 64-bit PT-Scotch (scotch-int64) is needed");
#endif

namespace halogen::partition {

bool ptscotch_available() {
#ifdef HALOGEN_HAVE_PTSCOTCH
  return true;
#else
  return false;
#endif
}

namespace {

// A part and a degree in one int64: degree << 24 | part (P < 2^24 is checked; degrees stay below 2^39).
constexpr int kPartBits = 24;
constexpr int64_t kMaxParts = int64_t{1} << kPartBits;
int64_t pack_part_degree(int32_t part, int64_t degree) { return (degree << kPartBits) | part; }
int32_t packed_part(int64_t word) { return static_cast<int32_t>(word & (kMaxParts - 1)); }
int64_t packed_degree(int64_t word) { return word >> kPartBits; }

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<int64_t>() { return MPI_INT64_T; }
template <>
MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }

// Runs `step` on every process. When it throws a UserError on any process, every process throws the message
// of the lowest such rank: all leave together and none waits in a later collective.
void collectively(MPI_Comm comm, const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const UserError& e) {
    error = e.what();
  }
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int failing = error.empty() ? size : rank;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, comm));
  if (failing == size) return;
  int64_t length = static_cast<int64_t>(error.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, failing, comm));
  error.resize(static_cast<size_t>(length));
  MPI_CHECK(MPI_Bcast(error.data(), static_cast<int>(length), MPI_CHAR, failing, comm));
  throw UserError(error);
}

// All-to-all of variable blocks with 64-bit counts: `send` holds the block for rank d at
// [send_offsets[d], send_offsets[d+1]); returns the blocks received, grouped by source rank ascending, and
// their offsets in *recv_offsets (K+1). MPI_Alltoallv takes int counts and displacements, so the blocks go in
// rounds of at most `round_elements` per pair, copied through buffers of K x round_elements.
template <typename T>
std::vector<T> exchange(MPI_Comm comm, const std::vector<T>& send, const std::vector<int64_t>& send_offsets,
                        std::vector<int64_t>* recv_offsets) {
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int64_t> send_counts(size), recv_counts(size);
  for (int d = 0; d < size; ++d) send_counts[d] = send_offsets[d + 1] - send_offsets[d];
  MPI_CHECK(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts.data(), 1, MPI_INT64_T, comm));
  recv_offsets->assign(size + 1, 0);
  for (int s = 0; s < size; ++s) (*recv_offsets)[s + 1] = (*recv_offsets)[s] + recv_counts[s];
  std::vector<T> recv(static_cast<size_t>(recv_offsets->back()));

  // At most 64 MiB per buffer: rounds stay cheap however many processes, and int displacements never overflow.
  const int64_t round_elements = std::max<int64_t>(1, (int64_t{64} << 20) / static_cast<int64_t>(sizeof(T)) / size);
  int64_t largest = 0;
  for (int d = 0; d < size; ++d) largest = std::max({largest, send_counts[d], recv_counts[d]});
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_INT64_T, MPI_MAX, comm));
  const int64_t rounds = (largest + round_elements - 1) / round_elements;
  std::vector<T> send_round, recv_round;
  std::vector<int> scount(size), sdispl(size), rcount(size), rdispl(size);
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t skip = round * round_elements;
    int at = 0;
    for (int d = 0; d < size; ++d) {
      scount[d] = static_cast<int>(std::clamp<int64_t>(send_counts[d] - skip, 0, round_elements));
      sdispl[d] = at;
      at += scount[d];
    }
    send_round.resize(static_cast<size_t>(at));
    for (int d = 0; d < size; ++d)
      std::copy_n(send.begin() + send_offsets[d] + skip * (scount[d] > 0), scount[d], send_round.begin() + sdispl[d]);
    at = 0;
    for (int s = 0; s < size; ++s) {
      rcount[s] = static_cast<int>(std::clamp<int64_t>(recv_counts[s] - skip, 0, round_elements));
      rdispl[s] = at;
      at += rcount[s];
    }
    recv_round.resize(static_cast<size_t>(at));
    MPI_CHECK(MPI_Alltoallv(send_round.data(), scount.data(), sdispl.data(), mpi_type<T>(), recv_round.data(),
                            rcount.data(), rdispl.data(), mpi_type<T>(), comm));
    for (int s = 0; s < size; ++s)
      std::copy_n(recv_round.begin() + rdispl[s], rcount[s], recv.begin() + (*recv_offsets)[s] + skip);
  }
  return recv;
}

// What every process reads of the graph file besides its slice.
struct FileHeader {
  std::string name;
  int64_t num_nodes = 0, num_edges = 0, num_features = 0;
  int32_t num_classes = 0;
  bool has_labels = false;
  std::vector<int64_t> train, valid, test;  // the splits, whole (O(N))
};

// Reads and checks the root attributes, the dataset shapes and the splits; refuses what this method cannot
// partition (directed, dynamic, regression targets).
FileHeader read_header(const h5::File& file) {
  const char* path = file.path().c_str();
  io::check_graph_format(file);
  FileHeader h;
  h.name = file.has_attr("name") ? file.attr_string("name") : "";
  h.num_nodes = file.attr_int("num_nodes");
  h.num_edges = file.attr_int("num_edges");
  HALOGEN_USER_CHECK(h.num_nodes >= 0 && h.num_edges >= 0, "%s: attribute num_nodes or num_edges is negative",
                     path);
  const int64_t num_classes = file.attr_int("num_classes");
  HALOGEN_USER_CHECK(num_classes >= 0 && num_classes < (int64_t{1} << 31),
                     "%s: attribute num_classes %lld out of range", path, static_cast<long long>(num_classes));
  h.num_classes = static_cast<int32_t>(num_classes);
  HALOGEN_USER_CHECK(file.attr_int("directed") == 0,
                     "%s: --method ptscotch partitions undirected graphs; this one is directed (use --method metis)",
                     path);
  HALOGEN_USER_CHECK(!file.exists("/snapshots"),
                     "%s: --method ptscotch partitions static graphs; this one is dynamic (use --method metis)", path);
  const std::vector<int64_t> indptr = file.shape("/csr/indptr"), indices = file.shape("/csr/indices");
  HALOGEN_USER_CHECK(indptr.size() == 1 && indptr[0] == h.num_nodes + 1, "%s: /csr/indptr: expected shape [%lld]",
                     path, static_cast<long long>(h.num_nodes + 1));
  HALOGEN_USER_CHECK(indices.size() == 1 && indices[0] == h.num_edges,
                     "%s: attribute num_edges %lld != %lld entries in /csr/indices", path,
                     static_cast<long long>(h.num_edges), static_cast<long long>(indices.empty() ? 0 : indices[0]));
  if (file.exists("/csr/weight"))
    HALOGEN_USER_CHECK(file.shape("/csr/weight") == indices, "%s: /csr/weight: expected shape [%lld]", path,
                       static_cast<long long>(h.num_edges));
  if (file.exists("/node/feat")) {
    const std::vector<int64_t> dims = file.shape("/node/feat");
    HALOGEN_USER_CHECK(dims.size() == 2 && dims[0] == h.num_nodes, "%s: /node/feat: expected shape [%lld, F]",
                       path, static_cast<long long>(h.num_nodes));
    HALOGEN_USER_CHECK(file.is_floating("/node/feat"), "%s: /node/feat: expected float32, found %s", path,
                       file.element_type("/node/feat").c_str());
    h.num_features = dims[1];
  }
  if (file.exists("/node/label")) {
    HALOGEN_USER_CHECK(!file.is_floating("/node/label"),
                       "%s: /node/label holds regression targets, which --method ptscotch does not partition "
                       "(use --method metis)",
                       path);
    HALOGEN_USER_CHECK(file.shape("/node/label") == std::vector<int64_t>{h.num_nodes},
                       "%s: /node/label: expected shape [%lld]", path, static_cast<long long>(h.num_nodes));
    h.has_labels = true;
  }
  for (const char* split : {"train", "valid", "test"}) {
    const std::string dataset = std::string("/split/") + split;
    std::vector<int64_t> ids;
    if (file.exists(dataset)) ids = file.read<int64_t>(dataset);
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      HALOGEN_USER_CHECK(sorted[i] >= 0 && sorted[i] < h.num_nodes, "%s: %s: id %lld outside [0, %lld)", path,
                         dataset.c_str(), static_cast<long long>(sorted[i]), static_cast<long long>(h.num_nodes));
      HALOGEN_USER_CHECK(i == 0 || sorted[i] != sorted[i - 1], "%s: %s: id %lld appears twice", path,
                         dataset.c_str(), static_cast<long long>(sorted[i]));
    }
    (split[1] == 'r' ? h.train : split[0] == 'v' ? h.valid : h.test) = std::move(sorted);
  }
  return h;
}

// Degree of row i of the slice without its self-loop.
int64_t slice_degree(const GraphSlice& slice, int64_t i) {
  const auto begin = slice.indices.begin() + slice.row_begin(i), end = slice.indices.begin() + slice.row_end(i);
  return (end - begin) - (std::binary_search(begin, end, slice.begin + i) ? 1 : 0);
}

// SCOTCH_dgraphPart of the distributed graph (self-loops dropped), one vertex weight base_weight + degree.
// Returns the part of each vertex of the slice.
std::vector<int32_t> scotch_parts(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& degree,
                                  int64_t base_weight, const AssignOptions& options) {
  const int64_t n_local = slice.num_rows();
  std::vector<int32_t> part(static_cast<size_t>(n_local), 0);
  if (options.num_parts == 1) return part;
#ifdef HALOGEN_HAVE_PTSCOTCH
  std::vector<SCOTCH_Num> vertloctab(static_cast<size_t>(n_local) + 1, 0), veloloctab(static_cast<size_t>(n_local));
  std::vector<SCOTCH_Num> edgeloctab;
  edgeloctab.reserve(slice.indices.size());
  for (int64_t i = 0; i < n_local; ++i) {
    for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e)
      if (slice.indices[e] != slice.begin + i) edgeloctab.push_back(slice.indices[e]);
    vertloctab[i + 1] = static_cast<SCOTCH_Num>(edgeloctab.size());
    veloloctab[i] = base_weight + degree[i];
  }
  const SCOTCH_Num edgelocnbr = static_cast<SCOTCH_Num>(edgeloctab.size());
  SCOTCH_Dgraph graph;
  SCOTCH_Strat strategy;
  HALOGEN_USER_CHECK(SCOTCH_dgraphInit(&graph, comm) == 0, "PT-Scotch: SCOTCH_dgraphInit failed");
  SCOTCH_stratInit(&strategy);
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int status = SCOTCH_dgraphBuild(&graph, 0, n_local, n_local, vertloctab.data(), nullptr, veloloctab.data(),
                                  nullptr, edgelocnbr, edgelocnbr, edgeloctab.data(), nullptr, nullptr);
  if (status == 0)
    // SPEED: one sequential multilevel bipartition of the coarsest graph instead of two. On RMAT the coarse
    // graphs stay dense (hubs), and the second try cost 8x the time (RMAT-16, P=4, K=2: 158 s vs 20 s) for a
    // 3% smaller halo.
    status = SCOTCH_stratDgraphMapBuild(&strategy, SCOTCH_STRATSPEED, size, options.num_parts, options.imbalance - 1.0);
  std::vector<SCOTCH_Num> scotch_part(static_cast<size_t>(n_local), 0);
  // One thread per process: PT-Scotch's threaded phases (the library spawns one per core) make the result
  // depend on thread timing whatever the seed (Cora, P=2, K=2: halo rows 249-354 over runs). With one thread
  // the same input, K and --seed give the same partition.
  SCOTCH_Context context;
  SCOTCH_Dgraph bound;
  SCOTCH_randomSeed(static_cast<SCOTCH_Num>(options.seed % static_cast<uint64_t>(SCOTCH_NUMMAX)));
  SCOTCH_randomReset();
  if (status == 0) status = SCOTCH_contextInit(&context);
  const bool have_context = status == 0;
  if (status == 0) status = SCOTCH_contextThreadSpawn(&context, 1, nullptr);
  if (status == 0) status = SCOTCH_dgraphInit(&bound, comm);
  const bool have_bound = status == 0;
  if (status == 0) status = SCOTCH_contextBindDgraph(&context, &graph, &bound);
  if (status == 0) status = SCOTCH_dgraphPart(&bound, options.num_parts, &strategy, scotch_part.data());
  if (have_bound) SCOTCH_dgraphExit(&bound);
  if (have_context) SCOTCH_contextExit(&context);
  SCOTCH_stratExit(&strategy);
  SCOTCH_dgraphExit(&graph);
  HALOGEN_USER_CHECK(status == 0,
                     "PT-Scotch failed to partition the graph (its message is above; is /csr symmetric?)");
  for (int64_t i = 0; i < n_local; ++i) part[i] = static_cast<int32_t>(scotch_part[i]);
  return part;
#else
  (void)comm, (void)degree, (void)base_weight;
  throw UserError("--method ptscotch: this build has no PT-Scotch (install libptscotch-dev and rebuild)");
#endif
}

// The remote columns of a slice: sorted, distinct.
std::vector<int64_t> slice_ghosts(const GraphSlice& slice) {
  std::vector<int64_t> ghosts;
  for (int64_t v : slice.indices)
    if (v < slice.begin || v >= slice.end) ghosts.push_back(v);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  return ghosts;
}

// One word per ghost (sorted, distinct), in the order of `ghosts`, answered by the owner of its slice
// (`bounds`) as answer(row of its slice).
std::vector<int64_t> ask_owners(MPI_Comm comm, const std::vector<int64_t>& ghosts, const std::vector<int64_t>& bounds,
                                int64_t slice_begin, const std::function<int64_t(int64_t)>& answer) {
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int64_t> ask_offsets(size + 1, 0), asked_offsets, reply_offsets;
  for (int r = 0; r <= size; ++r)
    ask_offsets[r] = std::lower_bound(ghosts.begin(), ghosts.end(), bounds[r]) - ghosts.begin();
  const std::vector<int64_t> asked = exchange(comm, ghosts, ask_offsets, &asked_offsets);
  std::vector<int64_t> answers(asked.size());
  for (size_t k = 0; k < asked.size(); ++k) answers[k] = answer(asked[k] - slice_begin);
  return exchange(comm, answers, asked_offsets, &reply_offsets);
}

// Broadcasts process 0's `words` (any length: int counts, so in blocks).
void broadcast_words(MPI_Comm comm, std::vector<int64_t>& words) {
  int64_t count = static_cast<int64_t>(words.size());
  MPI_CHECK(MPI_Bcast(&count, 1, MPI_INT64_T, 0, comm));
  words.resize(static_cast<size_t>(count));
  constexpr int64_t kBlock = int64_t{1} << 26;
  for (int64_t at = 0; at < count; at += kBlock)
    MPI_CHECK(MPI_Bcast(words.data() + at, static_cast<int>(std::min(kBlock, count - at)), MPI_INT64_T, 0, comm));
}

// The default balance (vertices, stored edges and training vertices each within options.imbalance of their
// target, partition/rebalance.h) on PT-Scotch's assignment, which balances only their sum: rebalance_loads's
// rounds over the processes' slices. Every process proposes moves for its own rows, with the parts of their
// remote neighbours asked from the owners; process 0 chooses among all proposals (RebalanceRound::choose,
// rebalance_loads's order and checks) and broadcasts the moves made. So the moves are the ones the serial
// rebalance makes from the same assignment, whatever K. Memory on process 0: 8 words per proposal of a round
// (at most the vertices of the overloaded parts).
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

// Stored cut entries of the whole graph (each cut edge counts from both sides), from the slices.
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

// Fine parts -> parts: the quotient graph of `fine_local`'s F fine parts (vertex weights: the slice's
// vertices, stored edges and training vertices per fine part; edge weights: entries between fine parts) is
// gathered on process 0, which partitions it into options.num_parts with METIS's multi-constraint k-way, and
// broadcasts the map. PT-Scotch balances one weight; METIS balances each constraint on the quotient, whose
// vertices are PT-Scotch's own low-cut pieces, so the balance costs little cut. The quotient has F vertices
// and at most F^2 edges (F = kFinePartsPerPart x P <= kMaxFineParts). Returns the part of each slice row.
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

// The default balance (Balance::all) on PT-Scotch's assignment `part_local`, which balances only the sum of the
// constraints. Direct route: rebalance_slices (moves, then the refinement). When that grows the edge cut by more
// than kFineRouteCutGrowth, the fine route too: PT-Scotch into kFinePartsPerPart x P fine parts, merged into P by
// merge_fine_parts (METIS multi-constraint on the quotient), then rebalance_slices for what the merge left over
// the bound; the route with the smaller cut is kept (ties: direct). Both are deterministic for a given K;
// returns the route taken ("direct" or "fine").
std::string balance_ptscotch(MPI_Comm comm, const GraphSlice& slice, const std::vector<int64_t>& bounds,
                             const std::vector<int64_t>& train, int64_t num_edges, const std::vector<int64_t>& degree,
                             int64_t base_weight, const AssignOptions& options, std::vector<int32_t>& part_local) {
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
  collectively(comm, [&] { fine_local = scotch_parts(comm, slice, degree, base_weight, fine_options); });
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

// Local ids within part p of the members of a sorted split it owns, ascending.
std::vector<int64_t> owned_split(const std::vector<int64_t>& split, const std::vector<int64_t>& owned_gid) {
  std::vector<int64_t> local;
  auto at = owned_gid.begin();
  for (int64_t v : split) {  // both ascending: one merge pass
    at = std::lower_bound(at, owned_gid.end(), v);
    if (at == owned_gid.end()) break;
    if (*at == v) local.push_back(at - owned_gid.begin());
  }
  return local;
}

// The received rows of part p: record offsets into `records` (layout: gid, part, label, n, then n x (column,
// part|degree word)) and entry offsets into `weights`.
struct PartRows {
  std::vector<int64_t> record_at, weight_at;
};

// Builds part p's shard from its rows (every column carries its part and degree), the same shard build_shard
// makes from the whole graph. Adds the part's cut entries to *cut_entries.
graph::Shard build_shard_from_rows(const FileHeader& header, int32_t p, int32_t num_parts,
                                   const std::vector<int64_t>& records, const std::vector<float>& weights,
                                   const PartRows& rows, bool weighted, int64_t* cut_entries) {
  graph::Shard s;
  s.part = p;
  s.num_parts = num_parts;
  s.global_num_nodes = header.num_nodes;
  s.global_num_edges = header.num_edges;
  s.num_classes = header.num_classes;
  s.num_features = header.num_features;
  s.graph_name = header.name;
  const int64_t n_own = static_cast<int64_t>(rows.record_at.size());
  s.owned_gid.resize(n_own);
  for (int64_t i = 0; i < n_own; ++i) s.owned_gid[i] = records[rows.record_at[i]];
  HALOGEN_USER_CHECK(n_own <= std::numeric_limits<int32_t>::max(),
                     "part %d owns %lld vertices, more than a shard's int32 local ids allow; use more parts", p,
                     static_cast<long long>(n_own));

  // Halo: remote columns as (part, gid, degree), grouped by part, ascending gid within a part.
  struct Remote {
    int32_t part;
    int64_t gid, degree;
  };
  std::vector<Remote> remote;
  int64_t cut = 0;
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t at = rows.record_at[i], n = records[at + 3];
    for (int64_t k = 0; k < n; ++k) {
      const int64_t column = records[at + 4 + 2 * k], word = records[at + 5 + 2 * k];
      if (packed_part(word) == p) continue;
      remote.push_back({packed_part(word), column, packed_degree(word)});
      ++cut;
    }
  }
  *cut_entries += cut;
  std::sort(remote.begin(), remote.end(),
            [](const Remote& a, const Remote& b) { return a.part != b.part ? a.part < b.part : a.gid < b.gid; });
  remote.erase(std::unique(remote.begin(), remote.end(),
                           [](const Remote& a, const Remote& b) { return a.gid == b.gid; }),
               remote.end());
  const int64_t n_halo = static_cast<int64_t>(remote.size());
  HALOGEN_USER_CHECK(n_own + n_halo <= std::numeric_limits<int32_t>::max(),
                     "part %d has %lld owned + %lld halo rows, more than a shard's int32 local ids allow; use "
                     "more parts",
                     p, static_cast<long long>(n_own), static_cast<long long>(n_halo));
  s.halo_gid.resize(n_halo);
  s.degree_halo.resize(n_halo);
  s.plan.recv_offsets.assign(static_cast<size_t>(num_parts) + 1, 0);
  for (int64_t h = 0; h < n_halo; ++h) {
    s.halo_gid[h] = remote[h].gid;
    s.degree_halo[h] = remote[h].degree;
    ++s.plan.recv_offsets[remote[h].part + 1];
  }
  for (int32_t q = 0; q < num_parts; ++q) s.plan.recv_offsets[q + 1] += s.plan.recv_offsets[q];
  remote = {};

  // Local CSR and the send plan: on an undirected graph, owned u goes to q exactly when u has a neighbour in q,
  // and q's halo group from p lists those u by ascending gid = ascending local id, the order fill_send writes.
  SendMarks marks(num_parts, n_own);
  s.indptr.assign(n_own + 1, 0);
  for (int64_t i = 0; i < n_own; ++i) s.indptr[i + 1] = s.indptr[i] + records[rows.record_at[i] + 3];
  s.indices.resize(s.indptr[n_own]);
  if (weighted) s.weight.resize(s.indptr[n_own]);
  s.degree_owned.resize(n_own);
  std::vector<std::pair<int32_t, float>> row;
  for (int64_t i = 0; i < n_own; ++i) {
    const int64_t at = rows.record_at[i], n = records[at + 3], gid = s.owned_gid[i];
    row.clear();
    bool self_loop = false;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t column = records[at + 4 + 2 * k];
      const int32_t q = packed_part(records[at + 5 + 2 * k]);
      int64_t local;
      if (q == p) {
        local = std::lower_bound(s.owned_gid.begin(), s.owned_gid.end(), column) - s.owned_gid.begin();
        self_loop |= column == gid;
      } else {
        const auto group = s.halo_gid.begin() + s.plan.recv_offsets[q];
        local = n_own + s.plan.recv_offsets[q] +
                (std::lower_bound(group, s.halo_gid.begin() + s.plan.recv_offsets[q + 1], column) - group);
        marks.mark(q, i);
      }
      row.emplace_back(static_cast<int32_t>(local), weighted ? weights[rows.weight_at[i] + k] : 0.0f);
    }
    std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t e = s.indptr[i];
    for (const auto& [column, weight] : row) {
      s.indices[e] = column;
      if (weighted) s.weight[e] = weight;
      ++e;
    }
    s.degree_owned[i] = n - (self_loop ? 1 : 0);
  }
  marks.fill_send(s.plan);

  if (header.has_labels) {
    s.labels.resize(n_own);
    for (int64_t i = 0; i < n_own; ++i) s.labels[i] = static_cast<int32_t>(records[rows.record_at[i] + 2]);
  }
  s.train = owned_split(header.train, s.owned_gid);
  s.valid = owned_split(header.valid, s.owned_gid);
  s.test = owned_split(header.test, s.owned_gid);
  return s;
}

}  // namespace

PartitionResult partition_graph_file_ptscotch(const PartitionRequest& request) {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  const AssignOptions& options = request.options;
  const int32_t P = options.num_parts;
  PhaseLog phases;
  std::unique_ptr<io::OutputLock> lock;
  std::unique_ptr<io::AtomicDirectory> output;
  try {
    // Process 0 owns the output directory: the lock and the temporary directory the shards go into.
    phases.begin("read graph");
    std::unique_ptr<h5::File> file;
    FileHeader header;
    SourceFile source;
    std::string staged_dir;
    collectively(comm, [&] {
      HALOGEN_USER_CHECK(P >= 1 && P < kMaxParts, "--parts: %d parts; --method ptscotch takes 1 to %lld", P,
                         static_cast<long long>(kMaxParts - 1));
      file = std::make_unique<h5::File>(request.graph_path, h5::Mode::read);
      header = read_header(*file);
      graph::Graph sizes;
      sizes.num_nodes = header.num_nodes;
      validate_options(sizes, options);
      HALOGEN_USER_CHECK(size <= header.num_nodes, "--method ptscotch: %d processes for %lld vertices", size,
                         static_cast<long long>(header.num_nodes));
      // assignment.h5 is gathered on process 0 with MPI's int counts and displacements.
      HALOGEN_USER_CHECK(header.num_nodes <= std::numeric_limits<int>::max(),
                         "--method ptscotch: %lld vertices; this version gathers assignment.h5 with int counts (at "
                         "most %d vertices)",
                         static_cast<long long>(header.num_nodes), std::numeric_limits<int>::max());
      if (!ptscotch_available() && P > 1)
        throw UserError("--method ptscotch: this build has no PT-Scotch (install libptscotch-dev and rebuild)");
      if (rank == 0) {
        check_graph_outside_output(request.graph_path, request.output_dir);
        check_output_dir(request.output_dir, request.force);
        lock = std::make_unique<io::OutputLock>(request.output_dir, /*create_parent=*/true);
        source = describe_source_file(request.graph_path);
        output = std::make_unique<io::AtomicDirectory>(request.output_dir);
        staged_dir = output->temp_path();
      }
    });
    {
      int64_t length = static_cast<int64_t>(staged_dir.size());
      MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, 0, comm));
      staged_dir.resize(static_cast<size_t>(length));
      MPI_CHECK(MPI_Bcast(staged_dir.data(), static_cast<int>(length), MPI_CHAR, 0, comm));
    }
    const int64_t N = header.num_nodes, E = header.num_edges;
    const bool weighted = file->exists("/csr/weight");

    // 1. This process's slice (rows + entries balanced), its labels, its degrees; features checked.
    std::vector<int64_t> bounds;
    GraphSlice slice;
    std::vector<int32_t> labels;
    collectively(comm, [&] {
      bounds = balanced_vertex_slices(N, E, size, [&](int64_t v) {
        return file->read_rows<int64_t>("/csr/indptr", v, v + 1)[0];
      });
      slice = read_graph_slice(*file, N, E, bounds[rank], bounds[rank + 1]);
      validate_feature_rows(*file, header.num_features, slice.begin, slice.end, request.feature_block_bytes);
      if (header.has_labels) {
        labels = file->read_rows<int32_t>("/node/label", slice.begin, slice.end);
        for (size_t i = 0; i < labels.size(); ++i)
          HALOGEN_USER_CHECK(labels[i] >= -1 && labels[i] < header.num_classes,
                             "%s: /node/label: index %lld: label %d outside [-1, %d)", request.graph_path.c_str(),
                             static_cast<long long>(slice.begin + static_cast<int64_t>(i)), labels[i],
                             header.num_classes);
      }
    });
    const int64_t n_local = slice.num_rows();
    std::vector<int64_t> degree(static_cast<size_t>(n_local));
    for (int64_t i = 0; i < n_local; ++i) degree[i] = slice_degree(slice, i);
    phases.end();
    if (rank == 0)
      log::info(strformat("read %s: %lld vertices, %lld edges, %d processes (process 0: %lld rows, %lld entries) "
                          "in %.2f s",
                          request.graph_path.c_str(), static_cast<long long>(N), static_cast<long long>(E), size,
                          static_cast<long long>(n_local), static_cast<long long>(slice.indices.size()),
                          phases.phases().back().seconds));

    // 2. PT-Scotch. Weight round(E/N) + degree: vertices and stored edges weigh the same in total.
    phases.begin("partition");
    const int64_t base_weight = std::max<int64_t>(1, N > 0 ? std::llround(static_cast<double>(E) / N) : 1);
    std::vector<int32_t> part_local;
    collectively(comm, [&] { part_local = scotch_parts(comm, slice, degree, base_weight, options); });
    std::string balance_route = "none";
    if (options.balance == Balance::all)
      balance_route = balance_ptscotch(comm, slice, bounds, header.train, E, degree, base_weight, options, part_local);
    phases.end();
    if (rank == 0)
      log::info(strformat("partition: ptscotch into %d parts on %d processes in %.2f s", P, size,
                          phases.phases().back().seconds));

    // 3. Part and degree of every remote column, from the owners of their slices.
    phases.begin("halo plan");
    std::vector<int64_t> ghosts = slice_ghosts(slice);
    std::vector<int64_t> ghost_word = ask_owners(comm, ghosts, bounds, slice.begin, [&](int64_t i) {
      return pack_part_degree(part_local[i], degree[i]);
    });
    auto column_word = [&](int64_t v) {
      if (v >= slice.begin && v < slice.end) return pack_part_degree(part_local[v - slice.begin], degree[v - slice.begin]);
      return ghost_word[std::lower_bound(ghosts.begin(), ghosts.end(), v) - ghosts.begin()];
    };

    // 4. Rows to the process of their part (p % K): gid, part, label, n, then n x (column, part|degree).
    std::vector<int64_t> records;
    std::vector<float> weights;
    std::vector<int64_t> received_offsets, weight_received_offsets;
    std::vector<int64_t> received;
    std::vector<float> received_weights;
    {
      std::vector<int64_t> send_offsets(size + 1, 0), weight_offsets(size + 1, 0);
      for (int64_t i = 0; i < n_local; ++i) {
        const int d = part_local[i] % size;
        send_offsets[d + 1] += 4 + 2 * (slice.row_end(i) - slice.row_begin(i));
        weight_offsets[d + 1] += slice.row_end(i) - slice.row_begin(i);
      }
      for (int d = 0; d < size; ++d) {
        send_offsets[d + 1] += send_offsets[d];
        weight_offsets[d + 1] += weight_offsets[d];
      }
      records.resize(send_offsets[size]);
      if (weighted) weights.resize(weight_offsets[size]);
      std::vector<int64_t> fill(send_offsets.begin(), send_offsets.end() - 1);
      std::vector<int64_t> weight_fill(weight_offsets.begin(), weight_offsets.end() - 1);
      for (int64_t i = 0; i < n_local; ++i) {
        const int d = part_local[i] % size;
        int64_t& at = fill[d];
        records[at++] = slice.begin + i;
        records[at++] = part_local[i];
        records[at++] = header.has_labels ? labels[i] : -1;
        records[at++] = slice.row_end(i) - slice.row_begin(i);
        for (int64_t e = slice.row_begin(i); e < slice.row_end(i); ++e) {
          records[at++] = slice.indices[e];
          records[at++] = column_word(slice.indices[e]);
          if (weighted) weights[weight_fill[d]++] = slice.weight[e];
        }
      }
      slice = GraphSlice{};
      ghosts = {};
      ghost_word = {};
      received = exchange(comm, records, send_offsets, &received_offsets);
      records = {};
      if (weighted) {
        received_weights = exchange(comm, weights, weight_offsets, &weight_received_offsets);
        weights = {};
      }
    }
    // Records arrive by source rank, slices ascend with rank: each part's rows come out in ascending gid.
    std::vector<int32_t> my_parts;
    for (int32_t p = rank; p < P; p += size) my_parts.push_back(p);
    std::vector<PartRows> rows(my_parts.size());
    {
      int64_t weight_at = 0;
      for (int64_t at = 0; at < static_cast<int64_t>(received.size());) {
        PartRows& r = rows[static_cast<size_t>(received[at + 1] / size)];
        r.record_at.push_back(at);
        r.weight_at.push_back(weight_at);
        weight_at += received[at + 3];
        at += 4 + 2 * received[at + 3];
      }
    }
    phases.end();

    // 5. Shards of this process's parts, written into the temporary directory.
    phases.begin("write shards");
    PartitionStats stats;
    stats.num_parts = P;
    for (std::vector<int64_t>* v : {&stats.owned, &stats.nnz, &stats.train, &stats.halo, &stats.send,
                                    &stats.send_peers})
      v->assign(P, 0);
    int64_t cut_entries = 0;
    collectively(comm, [&] {
      for (size_t j = 0; j < my_parts.size(); ++j) {
        const int32_t p = my_parts[j];
        graph::Shard shard = build_shard_from_rows(header, p, P, received, received_weights, rows[j], weighted,
                                                   &cut_entries);
        rows[j] = PartRows{};
        if (header.num_features > 0)
          shard.features = read_owned_features(*file, shard.owned_gid, header.num_features,
                                               request.feature_block_bytes);
        stats.owned[p] = shard.num_owned();
        stats.nnz[p] = shard.nnz();
        stats.train[p] = static_cast<int64_t>(shard.train.size());
        stats.halo[p] = shard.num_halo();
        for (int32_t q = 0; q < P; ++q) {
          const int64_t sent = shard.plan.send_offsets[q + 1] - shard.plan.send_offsets[q];
          stats.send[p] += sent;
          stats.send_peers[p] += sent > 0;
        }
        io::write_shard(io::shard_path(staged_dir, p), shard);
      }
    });
    received = {};
    received_weights = {};
    for (std::vector<int64_t>* v : {&stats.owned, &stats.nnz, &stats.train, &stats.halo, &stats.send,
                                    &stats.send_peers})
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, v->data(), P, MPI_INT64_T, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &cut_entries, 1, MPI_INT64_T, MPI_SUM, comm));
    stats.cut_edges = cut_entries / 2;  // undirected: each cut edge is stored from both sides
    for (int32_t p = 0; p < P; ++p) stats.empty_parts += stats.owned[p] == 0;
    stats.total_halo = std::accumulate(stats.halo.begin(), stats.halo.end(), int64_t{0});
    stats.max_halo = *std::max_element(stats.halo.begin(), stats.halo.end());
    stats.vertex_balance = balance_of(stats.owned);
    stats.edge_balance = balance_of(stats.nnz);
    stats.train_balance = balance_of(stats.train);

    // The assignment, gathered on process 0 (N int32) for assignment.h5.
    std::vector<int32_t> part_of;
    {
      std::vector<int> counts(size), displs(size);
      for (int r = 0; r < size; ++r) {
        HALOGEN_ASSERT(bounds[r + 1] - bounds[r] <= std::numeric_limits<int>::max(), "slice too large to gather");
        counts[r] = static_cast<int>(bounds[r + 1] - bounds[r]);
        displs[r] = r == 0 ? 0 : displs[r - 1] + counts[r - 1];
      }
      if (rank == 0) part_of.resize(static_cast<size_t>(N));
      MPI_CHECK(MPI_Gatherv(part_local.data(), counts[rank], MPI_INT32_T, part_of.data(), counts.data(),
                            displs.data(), MPI_INT32_T, 0, comm));
    }
    collectively(comm, [&] {
      if (rank == 0) io::write_assignment(io::assignment_path(staged_dir), part_of, P);
    });
    part_of = {};
    phases.end();

    // meta.json (process 0) and the swap into place, once every shard is written.
    PartitionResult result;
    result.stats = stats;
    result.phases = phases.phases();
    const int64_t my_peak = peak_rss_bytes();
    std::vector<int64_t> peaks(size);
    MPI_CHECK(MPI_Allgather(&my_peak, 1, MPI_INT64_T, peaks.data(), 1, MPI_INT64_T, comm));
    result.process_peak_rss_bytes = *std::max_element(peaks.begin(), peaks.end());
    collectively(comm, [&] {
      if (rank != 0) return;
      nlohmann::json peak_mib = nlohmann::json::array();
      for (int64_t peak : peaks) peak_mib.push_back(static_cast<double>(peak) / (1 << 20));
      const nlohmann::json memory = {{"processes", size},
                                     {"peak_rss_mib_per_process", peak_mib},
                                     {"scotch_vertex_weight", strformat("%lld + degree", (long long)base_weight)},
                                     {"balance_route", balance_route}};
      graph::Graph summary;
      summary.name = header.name;
      summary.num_nodes = N;
      summary.num_features = header.num_features;
      summary.num_classes = header.num_classes;
      summary.directed = false;
      write_partition_meta(staged_dir, summary, E, static_cast<int64_t>(header.train.size()), source, request,
                           result, memory.dump());
      output->commit();
    });
    return result;
  } catch (const UserError& e) {
    if (output) throw UserError(output->name_final(e.what()));  // name the output directory, not the temporary
    throw;
  }
}

}  // namespace halogen::partition
