#pragma once
// `--config FILE` for every subcommand: options from a TOML file (CLI11's reader: `key = value`, strings in
// quotes, arrays in brackets, `true`/`false`, `#` comments). Keys are option names without the dashes
// (`epochs = 100`, `weight-decay = 0.0`; `weight_decay` is accepted too); positional arguments by their name
// (positional arguments stay on the command line). Keys may stand at the top level or in a section named
// after the subcommand (`[train]`,
// `[partition]`, `[bench.spmm]`) or after a group above it (`[bench]` counts as the top level for `bench spmm`), so
// one file can serve a whole pipeline: sections of other subcommands are skipped. `--config` may be given after
// any name of the command (`halogen generate --config F sbm` = `halogen generate sbm --config F`). Options given on the command line override the file. A key that is not an option of the subcommand
// (or a section that is no subcommand) is a UserError naming the file and the key. The file is read before
// parsing and its items become arguments (`--epochs=100`) inserted after the subcommand's name, so a value is
// converted, checked and counted as "given" exactly like a typed one; a value of the wrong type is reported
// by the option's own check, with the file named (config_file_in_use()).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace halogen::app {

// Adds --config to every subcommand of `root` (recursively), listed in each one's --help.
void add_config_options(CLI::App& root);

// argv without the program name, with the --config file's options inserted after the subcommand they are for
// (those not given on the command line). A missing file or a directory is a UserError saying which.
std::vector<std::string> expand_config_arguments(CLI::App& root, int argc, char** argv);

// The config file the last parse read ("" when none), for error messages about its values.
const std::string& config_file_in_use();

}  // namespace halogen::app
