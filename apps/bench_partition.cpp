// `halogen bench partition`: partition quality of METIS k-way vs the random and contiguous baselines, on a
// generated SBM (clear communities) and a generated RMAT (power law), for P = 2..64. Table per row:
//   graph  P  method  cut  halo_total  halo_max  halo/N  bal_v  time(s)  #wrong
// cut = edges between parts; halo_total = rows received per exchange summed over parts (the communication
// volume of one layer); #wrong = parts whose halo differs from a naive recomputation (must be 0; exits 1 if
// not). A last line per graph and P gives random/metis halo_total.
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_checks.h"
#include "apps/bench.h"
#include "apps/commands.h"
#include "core/error.h"
#include "core/timer.h"
#include "io/generate.h"
#include "io/graph_file.h"
#include "partition/assign.h"
#include "partition/halo_plan.h"
#include "partition/statistics.h"

namespace halogen::app {
namespace {

struct PartitionBenchOptions {
  int64_t sbm_nodes = 100000;
  int32_t sbm_classes = 8;
  double sbm_homophily = 0.95;
  double sbm_degree = 16;
  int rmat_scale = 16;
  int64_t rmat_edge_factor = 16;
  std::string graph_file;  // benchmark this file instead of the generated graphs
  std::string parts = "2,4,8,16,32,64";
  std::string methods = "metis,random,contiguous";
  uint64_t seed = 1;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// Parts whose planned halo differs from the set of remote columns of their rows, recomputed naively.
int count_wrong_halos(const graph::Graph& g, const partition::HaloPlan& plan) {
  std::vector<char> remote(g.num_nodes);
  int wrong = 0;
  for (int32_t p = 0; p < plan.num_parts; ++p) {
    std::fill(remote.begin(), remote.end(), 0);
    int64_t count = 0;
    for (int64_t u = 0; u < g.num_nodes; ++u) {
      if (plan.part_of[u] != p) continue;
      for (int64_t e = g.adjacency.indptr[u]; e < g.adjacency.indptr[u + 1]; ++e) {
        const int64_t v = g.adjacency.indices[e];
        if (plan.part_of[v] != p && !remote[v]) remote[v] = 1, ++count;
      }
    }
    bool ok = count == plan.num_halo(p);
    for (int64_t v : plan.halo_gid[p]) ok = ok && remote[v];
    wrong += !ok;
  }
  return wrong;
}

int bench_graph(const std::string& label, const graph::Graph& g, const std::vector<int32_t>& part_counts,
                const std::vector<partition::Method>& methods, uint64_t seed) {
  std::printf("# %s: %lld vertices, %lld stored edges\n", label.c_str(), static_cast<long long>(g.num_nodes),
              static_cast<long long>(g.num_edges()));
  std::printf("%-8s %4s %-10s %12s %12s %10s %7s %6s %8s %6s\n", "graph", "P", "method", "cut", "halo_total",
              "halo_max", "halo/N", "bal_v", "time(s)", "#wrong");
  int total_wrong = 0;
  for (int32_t parts : part_counts) {
    if (parts > g.num_nodes) {  // said, not skipped silently
      std::printf("# %s: P = %d skipped: more parts than the %lld vertices\n", label.c_str(), parts,
                  static_cast<long long>(g.num_nodes));
      continue;
    }
    int64_t metis_halo = -1, random_halo = -1;
    for (partition::Method method : methods) {
      partition::AssignOptions options;
      options.method = method;
      options.num_parts = parts;
      options.seed = seed;
      Stopwatch watch;
      std::vector<int32_t> part_of = partition::assign_parts(g, options);
      const double seconds = watch.seconds();
      const partition::HaloPlan plan = partition::build_halo_plan(g.adjacency, std::move(part_of), parts);
      const partition::PartitionStats stats = partition::compute_statistics(g, plan);
      const int wrong = count_wrong_halos(g, plan);
      total_wrong += wrong;
      std::printf("%-8s %4d %-10s %12lld %12lld %10lld %7.3f %6.3f %8.2f %6d\n", label.c_str(), parts,
                  partition::method_name(method), static_cast<long long>(stats.cut_edges),
                  static_cast<long long>(stats.total_halo), static_cast<long long>(stats.max_halo),
                  static_cast<double>(stats.total_halo) / static_cast<double>(g.num_nodes),
                  stats.vertex_balance, seconds, wrong);
      if (method == partition::Method::metis) metis_halo = stats.total_halo;
      if (method == partition::Method::random) random_halo = stats.total_halo;
    }
    if (metis_halo > 0 && random_halo >= 0)
      std::printf("%-8s %4d random/metis halo_total = %.1fx\n", label.c_str(), parts,
                  static_cast<double>(random_halo) / static_cast<double>(metis_halo));
  }
  return total_wrong;
}

void run(const PartitionBenchOptions& o) {
  std::vector<int32_t> part_counts;
  for (const std::string& item : split_list(o.parts)) {
    try {
      part_counts.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw UserError("--parts: \"" + item + "\" is not an integer");
    }
    HALOGEN_USER_CHECK(part_counts.back() >= 1, "--parts: %d is not a valid part count", part_counts.back());
  }
  std::vector<partition::Method> methods;
  for (const std::string& item : split_list(o.methods)) methods.push_back(partition::parse_method(item));

  int wrong = 0;
  if (!o.graph_file.empty()) {
    wrong += bench_graph("file", io::read_graph(o.graph_file), part_counts, methods, o.seed);
  } else {
    io::SbmParams sbm;
    sbm.nodes = o.sbm_nodes;
    sbm.classes = o.sbm_classes;
    sbm.homophily = o.sbm_homophily;
    sbm.avg_degree = o.sbm_degree;
    sbm.features = 0;
    sbm.seed = o.seed;
    std::printf(
        "# halogen generate sbm --nodes %lld --classes %d --avg-degree %g --homophily %g --features 0\n",
        static_cast<long long>(sbm.nodes), sbm.classes, sbm.avg_degree, sbm.homophily);
    wrong += bench_graph("sbm", io::generate_sbm(sbm), part_counts, methods, o.seed);
    io::RmatParams rmat;
    rmat.scale = o.rmat_scale;
    rmat.edge_factor = o.rmat_edge_factor;
    rmat.seed = o.seed;
    std::printf("# halogen generate rmat --scale %d --edge-factor %lld\n", rmat.scale,
                static_cast<long long>(rmat.edge_factor));
    wrong += bench_graph("rmat", io::generate_rmat(rmat), part_counts, methods, o.seed);
  }
  std::printf("# #wrong total: %d\n", wrong);
  if (wrong > 0) exit_code() = 1;
}

}  // namespace

void add_bench_partition(CLI::App& bench) {
  static PartitionBenchOptions options;
  CLI::App* cmd = bench.add_subcommand(
      "partition",
      "Partition quality: METIS vs random vs contiguous (cut, halo rows) on SBM and RMAT graphs");
  cmd->add_option("--parts", options.parts, "Comma-separated part counts")->capture_default_str();
  cmd->add_option("--methods", options.methods, "Comma-separated methods")->capture_default_str();
  cmd->add_option("--sbm-nodes", options.sbm_nodes, "SBM vertices")->capture_default_str();
  cmd->add_option("--sbm-classes", options.sbm_classes, "SBM blocks")->capture_default_str();
  cmd->add_option("--sbm-homophily", options.sbm_homophily, "SBM fraction of edges inside a block")
      ->capture_default_str();
  cmd->add_option("--sbm-avg-degree", options.sbm_degree, "SBM mean degree")->capture_default_str();
  cmd->add_option("--rmat-scale", options.rmat_scale, "RMAT: 2^scale vertices")->capture_default_str();
  cmd->add_option("--rmat-edge-factor", options.rmat_edge_factor, "RMAT: edges per vertex")
      ->capture_default_str();
  cmd->add_option("--graph", options.graph_file, "Benchmark this graph file instead of the generated graphs");
  cmd->add_option("--seed", options.seed, "Seed of the generators and the partitioners")
      ->check(seed_value())->capture_default_str();
  cmd->callback([] { run(options); });
}

}  // namespace halogen::app
