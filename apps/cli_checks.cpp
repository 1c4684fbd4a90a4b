#include "apps/cli_checks.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.size() <= 20 &&
                            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        errno = 0;
        if (digits) std::strtoull(text.c_str(), nullptr, 10);
        return digits && errno != ERANGE ? std::string()
                                         : "value " + text + " is not a seed: a whole number from 0 to 2^64-1";
      },
      "SEED");
}

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
