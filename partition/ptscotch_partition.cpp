// The driver of `--method ptscotch` (partition/ptscotch_partition.h): the steps in order, each failing
// together on every process. The steps' parts live by what they do: the file header (ptscotch_header.h), the
// slices (graph_slice.h), the MPI exchanges (slice_comm.h), the Scotch call (scotch_parts.h), the balance
// (ptscotch_balance.h), the rows on their way to their part (received_rows.h), the shard (shard_builder.h).
#include "partition/ptscotch_partition.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/check.h"
#include "core/error.h"
#include "core/format.h"
#include "core/log.h"
#include "io/atomic_file.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "io/part_file.h"
#include "partition/graph_slice.h"
#include "partition/ptscotch_balance.h"
#include "partition/ptscotch_header.h"
#include "partition/received_rows.h"
#include "partition/scotch_parts.h"
#include "partition/shard_builder.h"
#include "partition/slice_comm.h"

namespace halogen::partition {

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

    // 4. Rows to the process of their part (p % K), with the part and degree of every column.
    std::vector<int64_t> received, received_offsets, weight_received_offsets;
    std::vector<float> received_weights;
    {
      PackedRows packed = pack_rows(slice, part_local, labels, column_word, size);
      slice = GraphSlice{};
      ghosts = {};
      ghost_word = {};
      received = exchange(comm, packed.records, packed.offsets, &received_offsets);
      packed.records = {};
      if (weighted)
        received_weights = exchange(comm, packed.weights, packed.weight_offsets, &weight_received_offsets);
    }
    std::vector<PartRows> rows = index_received(received, rank, size, P);
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
      for (size_t j = 0; j < rows.size(); ++j) {
        const int32_t p = rank + static_cast<int32_t>(j) * size;
        graph::Shard shard =
            build_shard(ReceivedRows(header, p, P, received, received_weights, rows[j], weighted));
        rows[j] = PartRows{};
        const int64_t n_own = shard.num_owned();
        cut_entries += std::count_if(shard.indices.begin(), shard.indices.end(),
                                     [n_own](int32_t column) { return column >= n_own; });
        if (header.num_features > 0)
          shard.features = read_owned_features(*file, shard.owned_gid, header.num_features,
                                               request.feature_block_bytes);
        apply_vertex_order(shard, request.options.vertex_order);
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
