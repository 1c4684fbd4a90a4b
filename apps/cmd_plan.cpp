// `halogen plan PATH --model gcn --hidden H --layers L --device h200|cpu --ranks P1,P2,... [--threads T]
// [--json]`: per-rank memory (train::estimate_rank_memory, the model of `halogen info`) and epoch time
// (train::estimate_epoch) for P ranks on a device profile, before any job is queued. PATH is a partition
// directory, a graph file or a statistics file (apps/plan_shapes.h). With --json, one object per P per line.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/device_profile.h"
#include "apps/plan_shapes.h"
#include "core/error.h"
#include "core/format.h"
#include "core/runtime.h"
#include "train/epoch_estimate.h"
#include "train/memory_estimate.h"

namespace halogen::app {
namespace {

// The model options are ModelFlags' (apps/model_options.h), as train's; `config` is made from them.
struct PlanOptions : ModelFlags {
  std::string path;
  nn::ModelConfig config;
  std::string device = "h200";
  std::string profile;
  std::string ranks;
  int threads = 1;
  double edge_cut = -1;
  bool json = false;
};

std::vector<int> parse_ranks(const std::string& text) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    HALOGEN_USER_CHECK(!item.empty() && *end == '\0' && value >= 1 && value <= (1 << 20),
                       "--ranks: \"%s\" is not a list of positive rank counts such as 1,2,4", text.c_str());
    ranks.push_back(static_cast<int>(value));
  }
  HALOGEN_USER_CHECK(!ranks.empty(), "--ranks: give at least one rank count (e.g. --ranks 8,16)");
  return ranks;
}

// Directories searched for a profile named by --device: $HALOGEN_PROFILE_DIR, ./profiles, the source tree's
// profiles/ (a build directory's bin/ is three levels below it) and an installation's share/halogen/profiles.
std::vector<std::filesystem::path> profile_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* dir = std::getenv("HALOGEN_PROFILE_DIR"); dir != nullptr && *dir != '\0')
    dirs.emplace_back(dir);
  dirs.emplace_back("profiles");
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / ".." / ".." / ".." / "profiles");
    dirs.push_back(exe.parent_path() / ".." / "share" / "halogen" / "profiles");
  }
  return dirs;
}

std::string find_profile(const PlanOptions& options) {
  if (!options.profile.empty()) return options.profile;
  const std::string name =
      options.device == "cpu" ? "cpu-" + host_name() + ".json" : options.device + ".json";
  std::error_code ec;
  for (const std::filesystem::path& dir : profile_dirs())
    if (std::filesystem::is_regular_file(dir / name, ec)) return (dir / name).string();
  if (options.device == "cpu")
    throw UserError(
        strformat("plan: no profile %s for this host: calibrate one with `mpirun -np 2 halogen bench "
                  "profile -o profiles/%s` or give --profile FILE",
                  name.c_str(), name.c_str()));
  throw UserError(
      strformat("plan: no profile %s (looked in $HALOGEN_PROFILE_DIR, ./profiles and the installed "
                "profiles); give --profile FILE",
                name.c_str()));
}

struct PlanRow {
  int ranks = 0;
  train::EpochEstimate time;   // the slowest rank's
  int64_t bytes_per_rank = 0;  // the largest rank's
  int64_t max_owned = 0, max_halo = 0, max_nnz = 0;
  std::string shapes;
};

// The epoch-time model covers gcn only; other models get the memory alone.
bool timed(const PlanOptions& options) { return nn::model_spec(options.config).name == "gcn"; }

PlanRow plan_one(PlanSource& source, const PlanOptions& options, const train::DeviceProfile& profile,
                 int ranks) {
  PlanRow row;
  row.ranks = ranks;
  row.shapes = source.describe(ranks);
  const train::DeviceProfile link = profile_for_ranks(profile, ranks);
  for (const PlannedRank& rank : source.ranks(ranks)) {
    nn::RankShape shape = rank.shape;  // on the profile's device (the GPU stores the adjacency's values)
    shape.device = profile.kind == "cuda" ? Device::cuda : Device::cpu;
    row.bytes_per_rank = std::max(row.bytes_per_rank, train::estimate_rank_memory(options.config, shape));
    if (timed(options)) {
      const train::EpochEstimate time =
          train::estimate_epoch(options.config, rank.shape, rank.traffic, ranks, link, options.threads);
      if (time.epoch_ms >= row.time.epoch_ms) row.time = time;
    }
    row.max_owned = std::max(row.max_owned, rank.shape.num_owned);
    row.max_halo = std::max(row.max_halo, rank.shape.num_halo);
    row.max_nnz = std::max(row.max_nnz, rank.shape.nnz);
  }
  return row;
}

void print_json(const PlanRow& row, const PlanOptions& options, const train::DeviceProfile& profile) {
  const train::EpochEstimate& t = row.time;
  nlohmann::json line = {{"ranks", row.ranks},
                         {"epoch_ms", t.epoch_ms},
                         {"bytes_per_rank", row.bytes_per_rank},
                         {"spmm_ms", t.spmm_ms},
                         {"gemm_ms", t.gemm_ms},
                         {"elementwise_ms", t.elementwise_ms},
                         {"halo_ms", t.halo_ms},
                         {"halo_exposed_ms", t.halo_exposed_ms},
                         {"allreduce_ms", t.allreduce_ms},
                         {"allreduce_exposed_ms", t.allreduce_exposed_ms},
                         {"optimizer_ms", t.optimizer_ms},
                         {"spmm_bytes", t.spmm_bytes},
                         {"gemm_flops", t.gemm_flops},
                         {"halo_bytes", t.halo_bytes},
                         {"max_owned", row.max_owned},
                         {"max_halo", row.max_halo},
                         {"max_nnz", row.max_nnz},
                         {"model", options.model},
                         {"hidden", options.config.hidden},
                         {"layers", options.config.layers},
                         {"threads", options.threads},
                         {"profile_threads", profile.rates_for(options.threads).threads},
                         {"device", profile.name},
                         {"calibrated", profile.calibrated},
                         {"shapes", row.shapes}};
  if (profile.memory_bytes > 0) line["fits"] = row.bytes_per_rank <= profile.memory_bytes;
  if (!timed(options))  // memory only: the time fields are null, not zero
    for (const char* key : {"epoch_ms", "spmm_ms", "gemm_ms", "elementwise_ms", "halo_ms", "halo_exposed_ms",
                            "allreduce_ms", "allreduce_exposed_ms", "optimizer_ms", "spmm_bytes", "gemm_flops",
                            "halo_bytes"})
      line[key] = nullptr;
  std::printf("%s\n", line.dump().c_str());
}

void run_plan(PlanOptions& options) {
  require_static_model(options, "plan");
  options.config = model_config(options);
  const std::string profile_path = find_profile(options);
  const train::DeviceProfile profile = read_device_profile(profile_path);
  std::unique_ptr<PlanSource> source = open_plan_source(options.path, options.edge_cut);
  std::vector<int> ranks = options.ranks.empty() ? source->default_ranks() : parse_ranks(options.ranks);
  HALOGEN_USER_CHECK(!ranks.empty(), "plan: give --ranks P1,P2,... (e.g. --ranks 8,16,32)");
  if (!options.json) {
    std::printf("plan: %s, %d layers, hidden %lld, dropout %g | profile %s (%s) | %d thread(s) per rank\n",
                options.model.c_str(), options.config.layers, static_cast<long long>(options.config.hidden),
                options.config.dropout, profile.name.c_str(),
                profile.calibrated ? "calibrated" : "NOT calibrated: datasheet figures", options.threads);
    if (!profile.source.empty())
      std::printf("profile: %s (%s)\n", profile.source.c_str(), profile_path.c_str());
    const int measured_threads = profile.rates_for(options.threads).threads;
    if (measured_threads != options.threads)
      std::printf(
          "note: the profile has no rates for %d threads; those for %d are used (calibrate with `halogen "
          "bench profile --threads ...`)\n",
          options.threads, measured_threads);
    std::printf(
        "  ranks   epoch(ms)      spmm      gemm  elementw   halo(exposed)    allreduce(exposed)  "
        "memory/rank%s\n",
        profile.memory_bytes > 0 ? "  fits" : "");
  }
  std::vector<std::string> shape_lines;
  for (int p : ranks) {
    const PlanRow row = plan_one(*source, options, profile, p);
    if (options.json) {
      print_json(row, options, profile);
      continue;
    }
    const train::EpochEstimate& t = row.time;
    const std::string time_columns =
        timed(options) ? strformat("%11.1f %9.1f %9.1f %9.1f %8.1f (%6.1f) %10.1f (%6.1f)", t.epoch_ms, t.spmm_ms,
                                   t.gemm_ms, t.elementwise_ms, t.halo_ms, t.halo_exposed_ms, t.allreduce_ms,
                                   t.allreduce_exposed_ms)
                       : strformat("%11s %9s %9s %9s %8s %8s %10s %8s", "-", "-", "-", "-", "-", "", "-", "");
    std::printf("  %5d %s %9.2f GiB%s\n", p, time_columns.c_str(),
                static_cast<double>(row.bytes_per_rank) / 1073741824.0,
                profile.memory_bytes > 0 ? (row.bytes_per_rank <= profile.memory_bytes ? "  yes" : "  NO") : "");
    shape_lines.push_back(strformat("  P=%d: %s; largest rank owns %lld, halo %lld, nnz %lld", p,
                                    row.shapes.c_str(), static_cast<long long>(row.max_owned),
                                    static_cast<long long>(row.max_halo),
                                    static_cast<long long>(row.max_nnz)));
  }
  if (!options.json) {
    std::printf("shapes:\n");
    for (const std::string& line : shape_lines) std::printf("%s\n", line.c_str());
    std::printf(
        "epoch = spmm + gemm + elementwise + exposed halo + exposed allreduce + optimizer (slowest rank; "
        "train's mean_epoch_ms); memory as `halogen info` (train's allocated_bytes)\n");
    if (!timed(options))
      std::printf("epoch time: '-': the epoch-time model covers --model gcn only; the memory is %s's\n",
                  options.model.c_str());
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  static PlanOptions options;
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Predict per-rank memory and epoch time for P ranks on a device profile, before queueing a job");
  cmd->add_option("path", options.path, "Partition directory, graph file (.h5) or statistics file (.json)")
      ->required();
  add_model_options(cmd, options);  // memory: every static model; epoch time: gcn
  cmd->add_option(
         "--device", options.device,
         "Device profile: h200 (profiles/h200.json) or cpu (profiles/cpu-<host>.json from `halogen bench "
         "profile`)")
      ->capture_default_str();
  cmd->add_option("--profile", options.profile, "Device profile file (replaces the one --device names)");
  cmd->add_option("--ranks", options.ranks, "Rank counts to plan, comma-separated (e.g. 8,16,32,64)");
  cmd->add_option("--threads", options.threads, "OpenMP threads per rank (CPU profiles)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--edge-cut", options.edge_cut,
                  "Assumed fraction of stored edges cut (graph or statistics file; a graph file is otherwise "
                  "partitioned here)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--json", options.json, "One JSON object per rank count, one per line");
  cmd->callback([] { run_plan(options); });
}

}  // namespace halogen::app
