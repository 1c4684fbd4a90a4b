#pragma once
// Checks of numeric command-line values that CLI11's own validators let through (NaN passes CLI::Range and
// CLI::PositiveNumber, since every comparison with NaN is false), and the clamp of thread counts.
#include <CLI/CLI.hpp>
#include <string>

namespace halogen::app {

// A finite number above `lower` (or equal to it when `lower_inclusive`): "--lr -1", "--lr nan" and "--lr inf"
// are refused by CLI11 with "value -1 must be a finite number > 0" (exit 2).
CLI::Validator finite_number(double lower, bool lower_inclusive);
// A finite number in [lower, upper) (an interval written as the message shows it): "--dropout 1" is refused
// with "value 1 must be a finite number in [0, 1)".
CLI::Validator finite_interval(double lower, double upper_exclusive);

// Replacements of CLI::NonNegativeNumber and CLI::PositiveNumber, whose messages print the double range
// ("Value -1 not in range 0.000000 to 1797693...", and "Value 0 not in range 0.000000 to ..." for a positive
// one): "value -1 must be >= 0", "value 0 must be > 0"; NaN and infinity are refused too.
CLI::Validator non_negative();
// A seed: a whole number 0 .. 2^64-1 written in decimal digits (CLI11 would read "-1" into an unsigned seed
// as 18446744073709551615, which then went into metrics and checkpoints).
CLI::Validator seed_value();
CLI::Validator positive();

// `requested` OpenMP threads, clamped to the CPUs online on this node (more cannot run at once; libgomp fails
// creating 100000 of them). A clamp is one warning naming `what` (the flag or variable that asked).
int clamp_thread_count(int requested, const std::string& what);

}  // namespace halogen::app
