#include "apps/json_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/format.h"

namespace halogen::app {

nlohmann::json read_json_document(const std::string& path, const char* what, const char* format) {
  std::ifstream in(path);
  HALOGEN_USER_CHECK(in.good(), "%s: cannot open the %s", path.c_str(), what);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw UserError(strformat("%s: not valid JSON (%s)", path.c_str(), e.what()));
  }
  HALOGEN_USER_CHECK(doc.is_object() && doc.value("format", "") == format,
                     "%s: not a %s (\"format\" must be \"%s\")", path.c_str(), what, format);
  const char* version_key = doc.contains("format_version") ? "format_version" : "version";
  const nlohmann::json version = doc.value(version_key, nlohmann::json(1));
  HALOGEN_USER_CHECK(version.is_number_integer() && version.get<int64_t>() == 1,
                     "%s: %s %s is not supported (this build reads 1)", path.c_str(), version_key,
                     version.dump().c_str());
  return doc;
}

}  // namespace halogen::app
