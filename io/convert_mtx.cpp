#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "graph/build.h"
#include "io/convert.h"
#include "io/declared_sizes.h"
#include "io/text_reader.h"

namespace halogen::io {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}
}  // namespace

graph::Graph convert_matrix_market(const ConvertOptions& options) {
  LineReader reader(options.input);
  std::vector<std::string_view> tokens;
  std::string_view line;
  HALOGEN_USER_CHECK(reader.next(&line), "%s: empty file (expected a %%%%MatrixMarket header)",
                     options.input.c_str());
  split_tokens(line, ' ', &tokens);
  HALOGEN_USER_CHECK(
      tokens.size() == 5 && lower(tokens[0]) == "%%matrixmarket" && lower(tokens[1]) == "matrix",
      "%snot a Matrix Market header (expected '%%%%MatrixMarket matrix coordinate FIELD SYMMETRY')",
      reader.where().c_str());
  const std::string layout = lower(tokens[2]), field = lower(tokens[3]), symmetry = lower(tokens[4]);
  HALOGEN_USER_CHECK(layout == "coordinate", "%s'%s' matrices are not supported (only coordinate)",
                     reader.where().c_str(), layout.c_str());
  HALOGEN_USER_CHECK(field == "pattern" || field == "real" || field == "integer",
                     "%sfield '%s' is not supported (pattern, real or integer)", reader.where().c_str(),
                     field.c_str());
  HALOGEN_USER_CHECK(symmetry == "general" || symmetry == "symmetric",
                     "%ssymmetry '%s' is not supported (general or symmetric)", reader.where().c_str(),
                     symmetry.c_str());
  const bool weighted = field != "pattern";
  const size_t columns = weighted ? 3 : 2;

  int64_t rows = -1, cols = -1, entries = -1;
  while (reader.next(&line)) {
    split_tokens(line, ' ', &tokens);
    if (tokens.empty() || tokens[0][0] == '%') continue;
    HALOGEN_USER_CHECK(tokens.size() == 3, "%sexpected the size line 'ROWS COLS ENTRIES', found %zu columns",
                       reader.where().c_str(), tokens.size());
    rows = parse_int64(tokens[0], reader, 0);
    cols = parse_int64(tokens[1], reader, 1);
    entries = parse_int64(tokens[2], reader, 2);
    HALOGEN_USER_CHECK(rows >= 0 && cols >= 0 && entries >= 0, "%snegative size", reader.where().c_str());
    HALOGEN_USER_CHECK(entries > 0, "%sno entries: a graph without edges (a truncated file?)",
                       reader.where().c_str());
    HALOGEN_USER_CHECK(rows == cols, "%sthe matrix is %lld x %lld; an adjacency matrix must be square",
                       reader.where().c_str(), static_cast<long long>(rows), static_cast<long long>(cols));
    // Before anything of these sizes is allocated (a 2^28 x 2^28 header with one entry would write 2 GiB).
    check_declared_graph(reader.where(), "the size line", rows, entries);
    break;
  }
  HALOGEN_USER_CHECK(rows >= 0, "%s: no size line", options.input.c_str());

  graph::EdgeList edges;
  const auto reserved = static_cast<size_t>(reserve_hint(entries, reader.file_size()));
  edges.src.reserve(reserved);
  edges.dst.reserve(reserved);
  if (weighted) edges.weight.reserve(reserved);
  log::Progress progress("convert: entries", entries);
  while (reader.next(&line)) {
    split_tokens(line, ' ', &tokens);
    if (tokens.empty() || tokens[0][0] == '%') continue;
    HALOGEN_USER_CHECK(tokens.size() == columns, "%sexpected %zu columns for a %s matrix, found %zu",
                       reader.where().c_str(), columns, field.c_str(), tokens.size());
    HALOGEN_USER_CHECK(edges.size() < entries, "%smore entries than the %lld of the size line",
                       reader.where().c_str(), static_cast<long long>(entries));
    const int64_t i = parse_int64(tokens[0], reader, 0);
    const int64_t j = parse_int64(tokens[1], reader, 1);
    for (const int64_t index : {i, j}) {
      HALOGEN_USER_CHECK(index >= 1 && index <= rows, "%sindex %lld out of range [1, %lld]%s",
                         reader.where().c_str(), static_cast<long long>(index), static_cast<long long>(rows),
                         index == 0 ? " (Matrix Market indices are 1-based)" : "");
    }
    edges.src.push_back(i - 1);
    edges.dst.push_back(j - 1);
    if (weighted) {
      // An integer matrix holds integers: 1.5 there is a corrupt value, not a weight.
      const float w = field == "integer" ? static_cast<float>(parse_int64(tokens[2], reader, 2))
                                         : parse_float(tokens[2], reader, 2);
      HALOGEN_USER_CHECK(std::isfinite(w), "%scolumn 3: value is not finite", reader.where().c_str());
      edges.weight.push_back(w);
    }
    if ((edges.size() & 0xFFFF) == 0) progress.update(edges.size());
  }
  progress.finish();
  HALOGEN_USER_CHECK(edges.size() == entries, "%s: %lld entries, but the size line says %lld",
                     options.input.c_str(), static_cast<long long>(edges.size()),
                     static_cast<long long>(entries));

  graph::Graph g;
  g.name = options.name.empty() ? std::filesystem::path(options.input).stem().string() : options.name;
  // A symmetric file stores one triangle: mirror it whatever --directed says.
  g.directed = options.directed && symmetry == "general";
  g.num_nodes = rows;
  graph::BuildOptions build;
  build.symmetrize = !g.directed;
  g.adjacency = graph::build_csr(rows, std::move(edges), build);
  return g;
}

}  // namespace halogen::io
