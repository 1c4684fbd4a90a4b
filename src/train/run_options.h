#pragma once
// RunOptions: the options that determine what a training run computes (model, optimizer, feature
// preprocessing), by name, each value as JSON text. A checkpoint records them (its `config` attribute, a JSON
// object) and `--resume` refuses a run whose options differ (train/checkpoint.h, compare_run_options).
// Options that do not change the arithmetic (--epochs, --metrics, --quiet, --eval-every, --patience,
// --checkpoint-every, --threads, --device, --no-overlap) are not RunOptions.
//
// Names are the command-line option names with '_' for '-' ("lr", "weight_decay", "row_normalize").
// Numbers are written in the shortest text that reads back to the same value ("0.01" for the float 0.01f).
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::train {

struct RunOption {
  std::string name;
  std::string value;  // JSON text: 0.01, 16, true, "gcn"
};
using RunOptions = std::vector<RunOption>;

std::string json_value(float value);
std::string json_value(double value);
std::string json_value(int64_t value);
std::string json_value(uint64_t value);
std::string json_value(bool value);
std::string json_value(const std::string& value);
inline std::string json_value(int value) { return json_value(static_cast<int64_t>(value)); }
inline std::string json_value(const char* value) { return json_value(std::string(value)); }

template <typename T>
void add_option(RunOptions& options, const std::string& name, const T& value) {
  options.push_back({name, json_value(value)});
}

// {"name": value, ...} in the order given.
std::string options_json(const RunOptions& options);

}  // namespace halogen::train
