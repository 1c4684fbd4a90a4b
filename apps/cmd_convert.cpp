// `halogen convert`: a published dataset (OGB raw directory, OGB npz, Planetoid, Reddit, SNAP, Matrix Market)
// -> graph file.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <string>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/timer.h"
#include "io/atomic_file.h"
#include "io/convert.h"
#include "io/convert_chunked.h"
#include "io/graph_file.h"
#include "io/temporal.h"

namespace halogen::app {

namespace {

std::string detect_format(const std::string& input) {
  std::error_code ec;
  if (std::filesystem::is_directory(input, ec)) {
    if (std::filesystem::is_regular_file(std::filesystem::path(input) / "reddit_data.npz", ec))
      return "reddit";
    for (std::filesystem::directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string file = it->path().filename().string();
      if (file.size() > 10 && file.compare(0, 4, "ind.") == 0 &&
          file.compare(file.size() - 6, 6, ".graph") == 0)
        return "planetoid";
    }
    return "ogb";
  }
  const std::string ext = std::filesystem::path(input).extension().string();
  if (ext == ".mtx") return "mtx";
  if (ext == ".json") return "pgt-json";
  if (ext == ".npz" && std::filesystem::path(input).filename().string().rfind("reddit_", 0) == 0) {
    throw UserError(input +
                    ": give the directory holding reddit_data.npz and reddit_graph.npz, not the .npz file");
  }
  if (ext == ".npz") {
    throw UserError(input +
                    ": give the OGB dataset directory (the one holding raw/data.npz), not the .npz file");
  }
  return "snap";
}

// Refuses an output that is one of the files the conversion reads: the input itself, or for a dataset
// directory any file under it (raw/, split/ ...).
void refuse_overwriting_input(const std::string& output, const std::string& input) {
  io::refuse_output_equal_to_input(output, input, "--output");
  std::error_code ec;
  if (!std::filesystem::is_directory(input, ec)) return;
  for (std::filesystem::recursive_directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) io::refuse_output_equal_to_input(output, it->path().string(), "--output");
}

}  // namespace

void convert_to_graph_file(const std::string& chosen, io::ConvertOptions options, const std::string& output,
                           double time_step, int64_t memory_limit_mib) {
  Stopwatch watch;
  const int64_t baseline_rss = io::resident_bytes();
  refuse_overwriting_input(output, options.input);
  const io::OutputLock lock(output);  // one job per output file, held until it is in place
  interrupt::set_phase("convert " + options.input);
  if (memory_limit_mib > 0) {
    HALOGEN_USER_CHECK(chosen == "ogb" || chosen == "npz" || chosen == "snap",
                       "--memory-limit: bounded conversion reads ogb, npz and snap inputs, not %s",
                       chosen.c_str());
    HALOGEN_USER_CHECK(memory_limit_mib < (int64_t{1} << 40), "--memory-limit: %lld MiB is out of range",
                       static_cast<long long>(memory_limit_mib));
    options.memory_limit_bytes = memory_limit_mib << 20;
  }
  if (chosen == "ogb" || chosen == "npz" || chosen == "snap") {
    // The one pipeline of these formats (io/convert_chunked.h): the file is written while the input is read.
    const io::ConvertSummary s = chosen == "snap"  ? io::convert_snap_to_file(options, output)
                                 : chosen == "npz" ? io::convert_ogb_npz_to_file(options, output)
                                                   : io::convert_ogb_to_file(options, output);
    log::info(
        strformat("%s: %lld nodes, %lld stored edges (%s), %lld features, %d classes, split %lld/%lld/%lld "
                  "(converted in %.1f s, %lld sorted runs)",
                  output.c_str(), static_cast<long long>(s.num_nodes), static_cast<long long>(s.num_edges),
                  s.directed ? "directed" : "both directions", static_cast<long long>(s.num_features),
                  s.num_classes, static_cast<long long>(s.train), static_cast<long long>(s.valid),
                  static_cast<long long>(s.test), watch.seconds(), static_cast<long long>(s.runs)));
    const bool unlimited = s.limit_bytes >= std::numeric_limits<int64_t>::max() / 4;
    log::info(io::peak_memory_line(s.buffer_high_water_bytes, unlimited ? 0 : s.limit_bytes));
    return;
  }
  graph::Graph g;
  if (chosen == "planetoid")
    g = io::convert_planetoid(options);
  else if (chosen == "reddit")
    g = io::convert_reddit(options);
  else if (chosen == "snap-temporal")
    g = io::convert_snap_temporal(options, time_step);
  else if (chosen == "pgt-json")
    g = io::convert_pgt_json(options);
  else
    g = io::convert_matrix_market(options);
  const double read_s = watch.seconds();
  interrupt::set_phase("write " + output);
  io::write_graph(output, g);
  log::info(strformat(
      "%s: %lld nodes, %lld stored edges (%s), %lld features, %d classes, split %zu/%zu/%zu "
      "(read in %.1f s, written in %.1f s)",
      output.c_str(), static_cast<long long>(g.num_nodes), static_cast<long long>(g.num_edges()),
      g.directed ? "directed" : "both directions", static_cast<long long>(g.num_features), g.num_classes,
      g.train.size(), g.valid.size(), g.test.size(), read_s, watch.seconds() - read_s));
  if (!g.snapshots.empty()) {
    log::info(strformat("%s: %zu snapshots, regression targets [%lld, %lld]", output.c_str(),
                        g.snapshots.size(), static_cast<long long>(g.target_steps),
                        static_cast<long long>(g.target_steps > 0 ? g.num_nodes : 0)));
  }
  if (!g.preprocess.name.empty())
    log::info(strformat("%s: preprocess: %s (%s)", output.c_str(), g.preprocess.name.c_str(),
                        g.preprocess.formula.c_str()));
  // Unbounded: the buffers are what the process came to hold beyond its resident set before reading.
  log::info(io::peak_memory_line(std::max<int64_t>(0, io::max_resident_bytes() - baseline_rss), 0));
}

void add_convert_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("convert",
                                     "Convert a published dataset (OGB, Planetoid, Reddit, SNAP, Matrix "
                                     "Market, npz) into a Halogen graph file");
  static io::ConvertOptions options;
  static std::string format, output;
  static double time_step = 0;
  static int64_t memory_limit_mib = 0;
  cmd->add_option(
         "input", options.input,
         "Dataset directory (OGB, Planetoid ind.NAME.*, Reddit reddit_*.npz), SNAP edge list or Matrix "
         "Market file")
      ->required();
  cmd->add_option(
         "--format", format,
         "ogb (raw/*.csv.gz) | npz (OGB binary raw/data.npz) | planetoid (ind.NAME.{x,y,tx,ty,allx,ally,"
         "graph,test.index}: Cora, CiteSeer, PubMed with the standard split, as "
         "scripts/convert_planetoid.py) | "
         "reddit (reddit_data.npz + reddit_graph.npz, splits from node_types 1/2/3) | snap | mtx | pgt-json "
         "(PyTorch Geometric Temporal JSON -> snapshots); default: a directory holding reddit_data.npz is "
         "reddit, one holding ind.*.graph is planetoid, any other directory is ogb (csv or npz), *.mtx is "
         "mtx, "
         "*.json is pgt-json, any other file is snap; snap-temporal (SOURCE,TARGET,RATING,TIME lines -> "
         "snapshots, needs --time-step) is never detected")
      ->check(
          CLI::IsMember({"ogb", "npz", "planetoid", "reddit", "snap", "mtx", "pgt-json", "snap-temporal"}));
  cmd->add_option("-o,--output", output, "Output graph file (.h5); written atomically")->required();
  cmd->add_option("--split", options.split, "OGB split scheme under split/ (default: the only one present)");
  cmd->add_flag("--directed", options.directed,
                "Keep edges as given (default: symmetrise, storing every edge in both directions)");
  cmd->add_option("--time-step", time_step,
                  "snap-temporal: seconds per snapshot (e.g. 1209600 = two weeks); every step needs an edge");
  cmd->add_option(
         "--preprocess", options.preprocess,
         "pgt-json: pgt = the target transform of PyTorch Geometric Temporal's loader for the layout "
         "(per-node standardisation for England COVID, Montevideo bus, WikiMaths, Windmill; log(1 + y) "
         "for Twitter tennis; none for Chickenpox and PedalMe), recorded in the file; none = the "
         "values as given")
      ->check(CLI::IsMember({"pgt", "none"}))
      ->capture_default_str();
  cmd->add_option("--name", options.name,
                  "Graph name stored in the file (default: from the input path; reddit: reddit); planetoid: "
                  "the NAME of the ind.NAME.* files to read (default: the only set in the directory)");
  cmd->add_option("--valid-size", options.valid_size,
                  "planetoid: validation nodes after the training ones (the standard split: 500)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_option("--memory-limit", memory_limit_mib,
                  "ogb, npz and snap: data buffers within this many MiB (at least 4): edges that do not fit "
                  "are sorted in runs spilled beside the output and merged, rows are written as read; the "
                  "file is the same whatever the limit (0: 3/4 of the available memory)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->callback([] {
    const interrupt::Guard guard("convert");  // SIGTERM/SIGINT/SIGHUP: one line, exit 128 + signal
    const std::string chosen = format.empty() ? detect_format(options.input) : format;
    convert_to_graph_file(chosen, options, output, time_step, memory_limit_mib);
  });
}

}  // namespace halogen::app
