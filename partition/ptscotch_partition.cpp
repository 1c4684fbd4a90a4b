#include "partition/ptscotch_partition.h"

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
#include "partition/ptscotch_balance.h"
#include "partition/slice_comm.h"

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
      balance_route = balance_ptscotch(
          comm, slice, bounds, header.train, E, options,
          [&](const AssignOptions& o) { return scotch_parts(comm, slice, degree, base_weight, o); }, part_local);
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
