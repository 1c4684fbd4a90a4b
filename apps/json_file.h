#pragma once
// The small JSON documents the CLI reads (device profiles, graph statistics): one loader, one set of messages.
#include <nlohmann/json.hpp>
#include <string>

namespace halogen::app {

// Reads `path` as one JSON object whose "format" is `format` and whose "format_version" (an earlier file's
// "version"; absent: 1) is 1; UserError naming the file when it cannot be opened ("cannot open the <what>"), is
// not JSON, is not that format ("not a <what>"), or is another version.
nlohmann::json read_json_document(const std::string& path, const char* what, const char* format);

}  // namespace halogen::app
