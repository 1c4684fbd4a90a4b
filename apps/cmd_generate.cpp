// `halogen generate sbm|rmat`: synthetic graph files, deterministic per seed.
#include <string>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/generate.h"
#include "io/graph_file.h"
#include "io/temporal.h"

namespace halogen::app {

namespace {

void write_and_report(const graph::Graph& g, const std::string& output, const Stopwatch& watch) {
  const double generate_s = watch.seconds();
  interrupt::set_phase("write " + output);
  io::write_graph(output, g);
  log::info(strformat(
      "%s: %lld nodes, %lld stored edges (%s), %lld features, %d classes, split %zu/%zu/%zu "
      "(generated in %.1f s, written in %.1f s)",
      output.c_str(), static_cast<long long>(g.num_nodes), static_cast<long long>(g.num_edges()),
      g.directed ? "directed" : "both directions", static_cast<long long>(g.num_features), g.num_classes,
      g.train.size(), g.valid.size(), g.test.size(), generate_s, watch.seconds() - generate_s));
}

}  // namespace

void add_generate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate a synthetic graph file (SBM, RMAT, temporal SBM)");
  cmd->require_subcommand(1, 1);

  static io::SbmParams sbm;
  static std::string sbm_output, sbm_name;
  CLI::App* sbm_cmd = cmd->add_subcommand(
      "sbm",
      "Stochastic block model with class-correlated features (a GCN learns it well above majority class)");
  sbm_cmd->add_option("--nodes", sbm.nodes, "Number of vertices")->capture_default_str();
  sbm_cmd->add_option("--classes", sbm.classes, "Number of classes (equal-size blocks)")
      ->capture_default_str();
  sbm_cmd->add_option("--avg-degree", sbm.avg_degree, "Mean stored degree after symmetrisation")
      ->capture_default_str();
  sbm_cmd->add_option("--homophily", sbm.homophily, "Fraction of edges inside a class, in [0, 1]")
      ->capture_default_str();
  sbm_cmd->add_option("--features", sbm.features, "Feature width (0: no features)")->capture_default_str();
  sbm_cmd
      ->add_option(
          "--signal", sbm.signal,
          "Distance of each class mean (a random unit vector times this) from the origin, in units of "
          "the N(0,1) noise per coordinate")
      ->capture_default_str();
  sbm_cmd
      ->add_option(
          "--degree-exponent", sbm.degree_exponent,
          "0: narrow degrees; > 2: degree-corrected SBM with power-law degrees of this exponent (e.g. 2.5)")
      ->capture_default_str();
  sbm_cmd->add_option("--train-fraction", sbm.train_fraction, "Fraction of vertices in the training split")
      ->capture_default_str();
  sbm_cmd
      ->add_option("--valid-fraction", sbm.valid_fraction,
                   "Fraction in the validation split (test: the rest)")
      ->capture_default_str();
  sbm_cmd->add_option("--seed", sbm.seed, "Random seed (same seed, same file)")
      ->check(seed_value())
      ->capture_default_str();
  sbm_cmd->add_option("--name", sbm_name, "Name stored in the file (default: sbm)");
  sbm_cmd->add_option("-o,--output", sbm_output, "Output graph file (.h5)")->required();
  sbm_cmd->callback([] {
    const interrupt::Guard guard("generate");  // SIGTERM/SIGINT/SIGHUP: one line, exit 128 + signal
    const io::OutputLock lock(sbm_output);  // one job per output file
    Stopwatch watch;
    interrupt::set_phase("generate");
    graph::Graph g = io::generate_sbm(sbm);
    if (!sbm_name.empty()) g.name = sbm_name;
    write_and_report(g, sbm_output, watch);
  });

  static io::TemporalSbmParams temporal;
  static std::string temporal_output;
  CLI::App* temporal_cmd = cmd->add_subcommand(
      "temporal-sbm", "T snapshots over one SBM vertex set, with edge churn and class drift per step");
  temporal_cmd->add_option("--steps", temporal.steps, "Number of snapshots T")->capture_default_str();
  temporal_cmd
      ->add_option("--churn", temporal.churn,
                   "Per step, fraction of the previous snapshot's edges replaced by new SBM edges, in [0, 1]")
      ->capture_default_str();
  temporal_cmd
      ->add_option("--drift", temporal.drift, "Per step, probability that a vertex changes class, in [0, 1]")
      ->capture_default_str();
  temporal_cmd->add_option("--nodes", temporal.sbm.nodes, "Number of vertices")->capture_default_str();
  temporal_cmd->add_option("--classes", temporal.sbm.classes, "Number of classes")->capture_default_str();
  temporal_cmd->add_option("--avg-degree", temporal.sbm.avg_degree, "Mean stored degree of snapshot 0")
      ->capture_default_str();
  temporal_cmd->add_option("--homophily", temporal.sbm.homophily, "Fraction of edges inside a class")
      ->capture_default_str();
  temporal_cmd->add_option("--features", temporal.sbm.features, "Feature width (0: none)")
      ->capture_default_str();
  temporal_cmd->add_option("--signal", temporal.sbm.signal, "Class-mean distance in units of the noise")
      ->capture_default_str();
  temporal_cmd->add_option("--seed", temporal.sbm.seed, "Random seed (same seed, same file)")
      ->check(seed_value())->capture_default_str();
  temporal_cmd->add_option("-o,--output", temporal_output, "Output graph file (.h5)")->required();
  temporal_cmd->callback([] {
    const interrupt::Guard guard("generate");  // SIGTERM/SIGINT/SIGHUP: one line, exit 128 + signal
    const io::OutputLock lock(temporal_output);  // one job per output file
    Stopwatch watch;
    interrupt::set_phase("generate");
    const graph::Graph g = io::generate_temporal_sbm(temporal);
    write_and_report(g, temporal_output, watch);
    int64_t edges = 0;
    for (const graph::Csr& s : g.snapshots) edges += s.nnz();
    log::info(strformat("%s: %zu snapshots, %.1f stored edges per snapshot on average, union %lld",
                        temporal_output.c_str(), g.snapshots.size(),
                        static_cast<double>(edges) / static_cast<double>(g.snapshots.size()),
                        static_cast<long long>(g.num_edges())));
  });

  static io::RmatParams rmat;
  static std::string rmat_output, rmat_name;
  CLI::App* rmat_cmd =
      cmd->add_subcommand("rmat", "RMAT / Graph500 power-law graph (symmetrised, deduplicated)");
  rmat_cmd->add_option("--scale", rmat.scale, "2^scale vertices")->capture_default_str();
  rmat_cmd
      ->add_option("--edge-factor", rmat.edge_factor, "Generated edges per vertex (before symmetrisation)")
      ->capture_default_str();
  rmat_cmd->add_option("--a", rmat.a, "Quadrant probability a")->capture_default_str();
  rmat_cmd->add_option("--b", rmat.b, "Quadrant probability b")->capture_default_str();
  rmat_cmd->add_option("--c", rmat.c, "Quadrant probability c (d = 1 - a - b - c)")->capture_default_str();
  rmat_cmd->add_option("--features", rmat.features, "Random N(0,1) features of this width (0: none)")
      ->capture_default_str();
  rmat_cmd
      ->add_option("--classes", rmat.classes, "Random labels in [0, classes) with a 60/20/20 split (0: none)")
      ->capture_default_str();
  rmat_cmd->add_option("--seed", rmat.seed, "Random seed (same seed, same file)")
      ->check(seed_value())
      ->capture_default_str();
  rmat_cmd->add_option("--name", rmat_name, "Name stored in the file (default: rmat-SCALE-EDGEFACTOR)");
  rmat_cmd->add_option("-o,--output", rmat_output, "Output graph file (.h5)")->required();
  rmat_cmd->callback([] {
    const interrupt::Guard guard("generate");  // SIGTERM/SIGINT/SIGHUP: one line, exit 128 + signal
    const io::OutputLock lock(rmat_output);  // one job per output file
    Stopwatch watch;
    interrupt::set_phase("generate");
    graph::Graph g = io::generate_rmat(rmat);
    if (!rmat_name.empty()) g.name = rmat_name;
    write_and_report(g, rmat_output, watch);
  });
}

}  // namespace halogen::app
