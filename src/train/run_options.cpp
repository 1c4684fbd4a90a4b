#include "train/run_options.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/format.h"

namespace halogen::train {
namespace {

// The shortest %.Ng text that parses back to `value` (JSON has no NaN or infinity: those become strings).
template <typename T>
std::string shortest(T value, int max_digits) {
  if (!std::isfinite(value)) return nlohmann::json(strformat("%g", static_cast<double>(value))).dump();
  for (int digits = 1; digits < max_digits; ++digits) {
    const std::string text = strformat("%.*g", digits, static_cast<double>(value));
    if (static_cast<T>(std::strtod(text.c_str(), nullptr)) == value) return text;
  }
  return strformat("%.*g", max_digits, static_cast<double>(value));
}

}  // namespace

std::string json_value(float value) { return shortest(value, 9); }
std::string json_value(double value) { return shortest(value, 17); }
std::string json_value(int64_t value) { return std::to_string(value); }
std::string json_value(uint64_t value) { return std::to_string(value); }
std::string json_value(bool value) { return value ? "true" : "false"; }
std::string json_value(const std::string& value) { return nlohmann::json(value).dump(); }

std::string options_json(const RunOptions& options) {
  std::string text = "{";
  for (size_t i = 0; i < options.size(); ++i) {
    if (i > 0) text += ", ";
    text += json_value(options[i].name) + ": " + options[i].value;
  }
  return text + "}";
}

}  // namespace halogen::train
