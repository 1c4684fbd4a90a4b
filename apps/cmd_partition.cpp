// `halogen partition GRAPH.h5 --parts P -o DIR`: graph file -> partition directory (one shard per rank).
#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "partition/partition_dir.h"

namespace halogen::app {

namespace {

struct PartitionFlags {
  std::string graph_path, output_dir, method = "metis", objective = "cut", balance = "all", part_weights;
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
      "--seed %llu --balance %s --refine-iterations %d",
      f.graph_path.c_str(), f.parts, f.output_dir.c_str(), f.method.c_str(), f.objective.c_str(), f.imbalance,
      static_cast<unsigned long long>(f.seed), f.balance.c_str(), f.refine_iterations);
  if (!f.part_weights.empty()) command += " --part-weights " + f.part_weights;
  if (f.force) command += " --force";
  if (f.memory_limit_mib > 0) command += strformat(" --memory-limit %lld", (long long)f.memory_limit_mib);
  command += strformat(" --link-negatives %lld", (long long)f.link_negatives);
  return command;
}

void run_partition(const PartitionFlags& f) {
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
  request.memory_limit_bytes = f.memory_limit_mib << 20;
  request.link_negatives = f.link_negatives;
  if (f.parts < 1) throw UserError(strformat("--parts: %d parts requested; at least 1 is needed", f.parts));
  if (!f.part_weights.empty())
    request.options.part_weights = partition::parse_part_weights(f.part_weights, f.parts);
  request.command = creation_command(f);

  const partition::PartitionResult result = partition::partition_graph_file(request);
  std::printf("%s", partition::format_statistics(result.stats).c_str());
  for (const partition::PhaseRecord& phase : result.phases)
    std::printf("phase %-13s %8.2f s  peak %8.1f MiB\n", phase.name.c_str(), phase.seconds,
                static_cast<double>(phase.peak_rss_bytes) / (1 << 20));
  std::printf("process peak %.1f MiB\n", static_cast<double>(result.process_peak_rss_bytes) / (1 << 20));
  std::printf("wrote %s (meta.json, assignment.h5, %d shards)\n", f.output_dir.c_str(), f.parts);
}

}  // namespace

void add_partition_command(CLI::App& app) {
  auto flags = std::make_shared<PartitionFlags>();
  CLI::App* cmd = app.add_subcommand(
      "partition", "Partition a graph file into one shard per rank (METIS k-way, random, contiguous)");
  cmd->add_option("graph", flags->graph_path,
                  "Graph file (.h5) made by `halogen convert` or `halogen generate`")
      ->required();
  cmd->add_option("-k,--parts", flags->parts, "Number of parts = ranks (1 <= P <= vertices)")->required();
  cmd->add_option("-o,--output", flags->output_dir, "Output partition directory")->required();
  cmd->add_option("--method", flags->method, "metis (k-way, default), random or contiguous")
      ->capture_default_str();
  cmd->add_option("--objective", flags->objective,
                  "METIS objective: cut (edge cut) or vol (communication volume)")
      ->capture_default_str();
  cmd->add_option("--imbalance", flags->imbalance,
                  "Allowed max/mean part load, e.g. 1.03 (METIS ufactor = 1000*(imbalance-1))")
      ->capture_default_str();
  cmd->add_option("--seed", flags->seed, "Seed of METIS and of the random method")->capture_default_str();
  cmd->add_option("--balance", flags->balance,
                  "all: owned vertices, stored edges and training vertices each within --imbalance (METIS "
                  "multi-constraint, then a rebalancing pass); or one of the former modes: vertices, edges "
                  "(1+degree per vertex), train (1+degree and training vertices)")
      ->capture_default_str();
  cmd->add_option("--refine-iterations", flags->refine_iterations,
                  "METIS refinement iterations per level (METIS_OPTION_NITER); fewer is faster, e.g. 3")
      ->capture_default_str();
  cmd->add_option("--part-weights", flags->part_weights,
                  "Relative part sizes for ranks of unequal speed, e.g. 1,1,2,2 (one per part)");
  cmd->add_option("--memory-limit", flags->memory_limit_mib,
                  "Peak memory to aim at, MiB (0: 3x the graph file, at least 256); METIS runs on a sparsified graph "
                  "plus greedy refinement when its estimated peak would exceed it")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
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
