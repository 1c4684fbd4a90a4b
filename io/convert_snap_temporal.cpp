// SNAP temporal signed edge lists (SOURCE,TARGET,RATING,TIME; e.g. soc-sign-bitcoinotc.csv) -> dynamic graph.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/log.h"
#include "graph/build.h"
#include "io/temporal.h"
#include "io/text_reader.h"

namespace halogen::io {

graph::Graph convert_snap_temporal(const ConvertOptions& options, double time_step) {
  HALOGEN_USER_CHECK(time_step > 0 && std::isfinite(time_step), "--time-step must be > 0 seconds (got %g)",
                     time_step);
  LineReader reader(options.input);
  std::vector<int64_t> src, dst;
  std::vector<double> time;
  std::vector<std::string_view> tokens;
  std::string_view line;
  log::Progress progress("convert: temporal edges (bytes)", reader.file_size());
  while (reader.next(&line)) {
    split_tokens(line, ',', &tokens);
    if (tokens.empty() || line.empty() || tokens[0].empty() || tokens[0][0] == '#' || tokens[0][0] == '%')
      continue;
    HALOGEN_USER_CHECK(tokens.size() == 4,
                       "%sexpected 4 comma-separated columns (SOURCE,TARGET,RATING,TIME), found %zu",
                       reader.where().c_str(), tokens.size());
    const int64_t s = parse_int64(tokens[0], reader, 0), d = parse_int64(tokens[1], reader, 1);
    HALOGEN_USER_CHECK(s >= 0 && d >= 0, "%snegative node id %lld", reader.where().c_str(),
                       static_cast<long long>(std::min(s, d)));
    // The rating is checked but not stored (see io/temporal.h).
    HALOGEN_USER_CHECK(std::isfinite(parse_double(tokens[2], reader, 2)), "%scolumn 3: rating is not finite",
                       reader.where().c_str());
    const double t = parse_double(tokens[3], reader, 3);
    HALOGEN_USER_CHECK(std::isfinite(t), "%scolumn 4: time is not finite", reader.where().c_str());
    src.push_back(s);
    dst.push_back(d);
    time.push_back(t);
    if ((reader.line_number() & 0xFFFF) == 0) progress.update(reader.bytes_read());
  }
  progress.finish();
  HALOGEN_USER_CHECK(!src.empty(), "%s: no edges", options.input.c_str());

  // Ids remapped to 0..N-1 in increasing order of the original id (as convert_snap_to_file does).
  graph::Graph g;
  g.orig_id = src;
  g.orig_id.insert(g.orig_id.end(), dst.begin(), dst.end());
  std::sort(g.orig_id.begin(), g.orig_id.end());
  g.orig_id.erase(std::unique(g.orig_id.begin(), g.orig_id.end()), g.orig_id.end());
  auto dense_id = [&](int64_t original) {
    return std::lower_bound(g.orig_id.begin(), g.orig_id.end(), original) - g.orig_id.begin();
  };
  g.num_nodes = static_cast<int64_t>(g.orig_id.size());
  if (g.orig_id.back() == g.num_nodes - 1) g.orig_id.clear();  // already 0..N-1

  const double first = *std::min_element(time.begin(), time.end());
  const double last = *std::max_element(time.begin(), time.end());
  const double span_steps = std::floor((last - first) / time_step);
  HALOGEN_USER_CHECK(span_steps < 1e6, "%s: --time-step %g s makes %.3g snapshots (limit 1e6)",
                     options.input.c_str(), time_step, span_steps + 1);
  const int64_t steps = static_cast<int64_t>(span_steps) + 1;
  std::vector<graph::EdgeList> per_step(static_cast<size_t>(steps));
  for (size_t i = 0; i < src.size(); ++i) {
    const int64_t t =
        std::min<int64_t>(static_cast<int64_t>(std::floor((time[i] - first) / time_step)), steps - 1);
    per_step[t].src.push_back(dense_id(src[i]));
    per_step[t].dst.push_back(dense_id(dst[i]));
  }
  graph::BuildOptions build;
  build.symmetrize = !options.directed;
  build.drop_self_loops = true;
  for (int64_t t = 0; t < steps; ++t) {
    g.snapshots.push_back(graph::build_csr(g.num_nodes, std::move(per_step[t]), build));
    HALOGEN_USER_CHECK(g.snapshots.back().nnz() > 0,
                       "%s: time step %lld ([%.0f, %.0f) s) has no edges (self-loops aside), so its snapshot "
                       "would be empty; choose a larger --time-step",
                       options.input.c_str(), static_cast<long long>(t),
                       first + static_cast<double>(t) * time_step,
                       first + static_cast<double>(t + 1) * time_step);
  }
  g.name = options.name.empty() ? "snap-temporal" : options.name;
  g.directed = options.directed;
  g.adjacency = snapshot_union(g.num_nodes, g.snapshots);
  return g;
}

}  // namespace halogen::io
