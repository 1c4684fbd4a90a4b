// The one reader of SNAP edge lists' lines, used by convert_snap_to_file (read once, or twice when the ids
// are renumbered after the edges were spilled): comment and header lines, "# Nodes: N", 2 or 3 columns,
// non-negative ids, progress.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "io/text_reader.h"

namespace halogen::io {

// One pass over a SNAP edge list: edge(src, dst) per edge line.
// Returns the "# Nodes: N" of the header (-1 when there is none) and the largest id in *max_id.
template <typename Edge>
int64_t scan_snap(const std::string& path, int64_t* max_id, int64_t* edges, Edge&& edge) {
  LineReader reader(path);
  std::vector<std::string_view> tokens;
  std::string_view line;
  log::Progress progress("convert: edges (bytes)", reader.file_size());
  int64_t header_nodes = -1;
  *max_id = -1;
  *edges = 0;
  while (reader.next(&line)) {
    split_tokens(line, ' ', &tokens);
    if (!tokens.empty() && (tokens[0][0] == '#' || tokens[0][0] == '%')) {
      for (size_t i = 0; i + 1 < tokens.size() && header_nodes < 0; ++i) {
        const std::string_view token = tokens[i];
        if (token.size() >= 6 && token.substr(token.size() - 6) == "Nodes:")
          header_nodes = parse_int64(tokens[i + 1], reader, i + 1);
      }
      continue;
    }
    if (tokens.empty()) continue;
    HALOGEN_USER_CHECK(tokens.size() == 2 || tokens.size() == 3,
                       "%sexpected 2 columns (source target; a third is ignored), found %zu",
                       reader.where().c_str(), tokens.size());
    const int64_t src = parse_int64(tokens[0], reader, 0);
    const int64_t dst = parse_int64(tokens[1], reader, 1);
    HALOGEN_USER_CHECK(src >= 0 && dst >= 0, "%snegative node id %lld", reader.where().c_str(),
                       static_cast<long long>(std::min(src, dst)));
    *max_id = std::max(*max_id, std::max(src, dst));
    ++*edges;
    edge(src, dst);
    if ((reader.line_number() & 0xFFFF) == 0) progress.update(reader.bytes_read());
  }
  progress.finish();
  return header_nodes;
}

}  // namespace halogen::io
