#pragma once
// nlohmann::json's messages start with "[json.exception.out_of_range.406] "; a user reading "FILE: not valid
// JSON (...)" needs only the reason after it ("number overflow parsing '1e400'").
#include <cstring>
#include <string>

namespace halogen::io {

inline std::string json_reason(const char* what) {
  if (std::strncmp(what, "[json.exception.", 16) == 0) {
    if (const char* close = std::strstr(what, "] ")) return close + 2;
  }
  return what;
}

}  // namespace halogen::io
