#include "apps/cli_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/format.h"
#include "core/log.h"

namespace halogen::app {

namespace {
// A finite number above `lower` (or equal when `inclusive`); the message says "must be <what><bound>".
CLI::Validator bounded_below(double lower, bool inclusive, const std::string& what, const std::string& name) {
  const std::string bound = strformat("%s %g", inclusive ? ">=" : ">", lower);
  return CLI::Validator(
      [lower, inclusive, what, bound](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str()) return "value " + text + " is not a number";
        const bool ok = std::isfinite(value) && (inclusive ? value >= lower : value > lower);
        return ok ? std::string() : "value " + text + " must be " + what + bound;
      },
      name.empty() ? "FINITE " + bound : name);
}
}  // namespace

CLI::Validator finite_number(double lower, bool lower_inclusive) {
  return bounded_below(lower, lower_inclusive, "a finite number ", "");
}

CLI::Validator non_negative() { return bounded_below(0, true, "", "NONNEGATIVE"); }
CLI::Validator positive() { return bounded_below(0, false, "", "POSITIVE"); }

CLI::Validator finite_interval(double lower, double upper_exclusive) {
  const std::string interval = strformat("in [%g, %g)", lower, upper_exclusive);
  return CLI::Validator(
      [lower, upper_exclusive, interval](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str()) return "value " + text + " is not a number";
        const bool ok = std::isfinite(value) && value >= lower && value < upper_exclusive;
        return ok ? std::string() : "value " + text + " must be a finite number " + interval;
      },
      "FINITE " + interval);
}

int clamp_thread_count(int requested, const std::string& what) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  const int cores = static_cast<int>(std::max(1L, online));
  if (requested <= cores) return requested;
  log::warn(strformat("%s asks for %d OpenMP threads, but this node has %d CPU(s): using %d", what.c_str(),
                      requested, cores, cores));
  return cores;
}

}  // namespace halogen::app
