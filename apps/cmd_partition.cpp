// `halogen partition GRAPH.h5 --parts P -o DIR`: graph file -> partition directory (one shard per rank).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "comm/mpi_session.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/format.h"
#include "io/convert_chunked.h"
#include "partition/partition_dir.h"
#include "partition/ptscotch_partition.h"

namespace halogen::app {

namespace {

struct PartitionFlags {
  std::string graph_path, output_dir, method = "metis", objective = "cut", balance = "all", part_weights;
  std::string vertex_order = "rcm";
  int32_t parts = 0, refine_iterations = 10;
  double imbalance = 1.03;
  uint64_t seed = 1;
  bool force = false;
  int64_t memory_limit_mib = 0;
  int64_t link_negatives = 1;
};

// The command as it can be re-run, every option spelled out.
std::string creation_command(const PartitionFlags& f) {
  std::string command = strformat(
      "halogen partition %s --parts %d -o %s --method %s --objective %s --imbalance %g "
      "--seed %llu --balance %s --refine-iterations %d --vertex-order %s",
      f.graph_path.c_str(), f.parts, f.output_dir.c_str(), f.method.c_str(), f.objective.c_str(), f.imbalance,
      static_cast<unsigned long long>(f.seed), f.balance.c_str(), f.refine_iterations,
      f.vertex_order.c_str());
  if (!f.part_weights.empty()) command += " --part-weights " + f.part_weights;
  if (f.force) command += " --force";
  if (f.memory_limit_mib > 0) command += strformat(" --memory-limit %lld", (long long)f.memory_limit_mib);
  command += strformat(" --link-negatives %lld", (long long)f.link_negatives);
  return command;
}

// Processes the launcher (mpirun, srun) started, read before MPI is initialised; 1 when not launched as several.
int launcher_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return std::atoi(value);
  }
  return 1;
}

void print_result(const partition::PartitionResult& result, const PartitionFlags& f) {
  std::printf("%s", partition::format_statistics(result.stats).c_str());
  for (const partition::PhaseRecord& phase : result.phases)
    std::printf("phase %-13s %8.2f s  peak %8.1f MiB\n", phase.name.c_str(), phase.seconds,
                static_cast<double>(phase.peak_rss_bytes) / (1 << 20));
  std::printf("process peak %.1f MiB\n", static_cast<double>(result.process_peak_rss_bytes) / (1 << 20));
  std::printf("wrote %s (meta.json, assignment.h5, %d shards)\n", f.output_dir.c_str(), f.parts);
}

// The peak-memory line. Buffers: the resident memory the job came to hold beyond what the process held before
// it read the graph; limit: the memory budget METIS aimed at (--memory-limit, or its default of 3x the graph file).
void print_peak_memory(const partition::PartitionRequest& request, const PartitionFlags& f, int64_t baseline_rss) {
  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(f.graph_path, ec);
  const int64_t budget = partition::memory_budget_bytes(request, ec ? 0 : static_cast<int64_t>(file_bytes));
  std::printf(
      "%s\n", io::peak_memory_line(std::max<int64_t>(0, io::max_resident_bytes() - baseline_rss), budget).c_str());
}

// --method ptscotch: every process of the job takes part (partition/ptscotch_partition.h); process 0 prints.
void run_partition_ptscotch(const partition::PartitionRequest& request, const PartitionFlags& f) {
  int argc = 0;
  char** argv = nullptr;
  comm::MpiSession session(&argc, &argv);
  // SIGTERM/SIGINT/SIGHUP: temporaries and locks removed, exit 128 + signal, and one line for the job: process
  // 0's (a job is signalled as a whole by scancel or mpirun; the launcher reports a process signalled alone).
  const interrupt::Guard guard("partition");
  if (session.size() > 1)
    interrupt::set_rank_reporting(strformat("[%d/%d] ", session.rank(), session.size()),
                                  [rank = session.rank()] { return rank != 0; });
  try {
    const partition::PartitionResult result = partition::partition_graph_file_ptscotch(request);
    if (session.rank() == 0) {
      print_result(result, f);
      std::printf("processes %d, peak per process (max) %.1f MiB\n", session.size(),
                  static_cast<double>(result.process_peak_rss_bytes) / (1 << 20));
    }
  } catch (const UserError&) {
    throw;  // met by every process alike (collective): main prints it once
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halogen: error: [%d/%d] %s\n", session.rank(), session.size(), e.what());
    comm::abort_all(1);  // one process's failure would leave the others waiting in a collective
  }
}

void run_partition(const PartitionFlags& f) {
  const int64_t baseline_rss = io::resident_bytes();
  partition::PartitionRequest request;
  request.graph_path = f.graph_path;
  request.output_dir = f.output_dir;
  request.force = f.force;
  request.options.num_parts = f.parts;
  request.options.method = partition::parse_method(f.method);
  request.options.objective = partition::parse_objective(f.objective);
  request.options.balance = partition::parse_balance(f.balance);
  request.options.imbalance = f.imbalance;
  request.options.seed = f.seed;
  request.options.refine_iterations = f.refine_iterations;
  request.options.vertex_order = partition::parse_vertex_order(f.vertex_order);
  request.memory_limit_bytes = f.memory_limit_mib << 20;
  request.link_negatives = f.link_negatives;
  if (f.parts < 1) throw UserError(strformat("--parts: %d parts requested; at least 1 is needed", f.parts));
  if (!f.part_weights.empty())
    request.options.part_weights = partition::parse_part_weights(f.part_weights, f.parts);
  request.command = creation_command(f);
  if (request.options.method == partition::Method::ptscotch) return run_partition_ptscotch(request, f);
  HALOGEN_USER_CHECK(launcher_size() == 1,
                     "--method %s runs on one process, but %d were launched (use --method ptscotch under mpirun, "
                     "or run without mpirun)",
                     f.method.c_str(), launcher_size());

  const interrupt::Guard guard("partition");  // SIGTERM/SIGINT/SIGHUP: one line, exit 128 + signal (not METIS's error)
  print_result(partition::partition_graph_file(request), f);
  print_peak_memory(request, f, baseline_rss);
}

}  // namespace

void add_partition_command(CLI::App& app) {
  auto flags = std::make_shared<PartitionFlags>();
  CLI::App* cmd = app.add_subcommand(
      "partition", "Partition a graph file into one shard per rank (METIS k-way, PT-Scotch under mpirun, random, "
      "contiguous)");
  cmd->add_option("graph", flags->graph_path,
                  "Graph file (.h5) made by `halogen convert` or `halogen generate`")
      ->required();
  cmd->add_option("-k,--parts", flags->parts, "Number of parts = ranks (1 <= P <= vertices)")->required();
  cmd->add_option("-o,--output", flags->output_dir, "Output partition directory")->required();
  cmd->add_option("--method", flags->method,
                  "metis (k-way, one process, default), ptscotch (PT-Scotch, 64-bit, `mpirun -np K`: each process "
                  "reads 1/K of the graph), random or contiguous")
      ->capture_default_str();
  cmd->add_option("--objective", flags->objective,
                  "METIS objective: cut (edge cut) or vol (communication volume)")
      ->capture_default_str();
  cmd->add_option("--imbalance", flags->imbalance,
                  "Allowed max/mean part load, e.g. 1.03 (METIS ufactor = 1000*(imbalance-1))")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "Seed of METIS and of the random method")
      ->check(seed_value())
      ->capture_default_str();
  cmd->add_option("--balance", flags->balance,
                  "all: owned vertices, stored edges and training vertices each within --imbalance (METIS "
                  "multi-constraint, then a rebalancing pass); or one of the former modes: vertices, edges "
                  "(1+degree per vertex), train (1+degree and training vertices)")
      ->capture_default_str();
  cmd->add_option("--refine-iterations", flags->refine_iterations,
                  "METIS refinement iterations per level (METIS_OPTION_NITER); fewer is faster, e.g. 3")
      ->capture_default_str();
  cmd->add_option("--vertex-order", flags->vertex_order,
                  "Order of each shard's owned vertices: rcm (reverse Cuthill-McKee on the part's "
                  "subgraph: neighbours get nearby rows, so SpMM gathers stay in cache) or gid "
                  "(ascending global id, the graph file's order). Static graphs; dynamic ones keep gid")
      ->check(CLI::IsMember({"rcm", "gid"}))
      ->capture_default_str();
  cmd->add_option("--part-weights", flags->part_weights,
                  "Relative part sizes for ranks of unequal speed, e.g. 1,1,2,2 (one per part)");
  cmd->add_option("--memory-limit", flags->memory_limit_mib,
                  "Peak memory to aim at, MiB (0: 3x the graph file, at least 256); METIS runs on a sparsified graph "
                  "plus greedy refinement when its estimated peak would exceed it")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--link-negatives", flags->link_negatives,
                  "Dynamic graphs: sampled negative pairs per positive pair in the link-prediction steps written "
                  "into the shards (drawn with --seed; `train --task link` uses them)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))->capture_default_str();
  cmd->add_flag("--force", flags->force,
                "Replace the partition in a non-empty output directory: the new one is built beside it and "
                "swapped in when complete (the directory may hold only partition files)");
  cmd->callback([flags] { run_partition(*flags); });
}

}  // namespace halogen::app
