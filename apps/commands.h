#pragma once
// Subcommands of `halogen`. Each cmd_<name>.cpp adds one CLI11 subcommand whose callback does the work and
// throws halogen::UserError for anything the user can fix (printed by main as one line, exit 2).
#include <CLI/CLI.hpp>

#include <stdexcept>
#include <cstdint>
#include <string>

#include "io/convert.h"

namespace halogen::app {

// Thrown by a subcommand (or a mode of one) that this build does not implement yet: main exits 3.
class NotBuilt : public std::runtime_error {
 public:
  explicit NotBuilt(const std::string& what) : std::runtime_error(what + " is not built yet in this version") {}
};

// The process exit code a subcommand wants main to return (0 unless set).
int& exit_code();

void add_convert_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_partition_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_predict_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_download_command(CLI::App& app);

// `halogen convert`'s work after parsing (also run by `halogen download`): reads `options.input` in format
// `format` (ogb, npz, snap, mtx, pgt-json, snap-temporal, ...) and writes the graph file `output` atomically
// under its lock, logging what it wrote. ogb, npz and snap go through the one conversion pipeline
// (io/convert_chunked.h), its buffers within memory_limit_mib (0: 3/4 of the available memory); other formats
// refuse memory_limit_mib > 0.
void convert_to_graph_file(const std::string& format, io::ConvertOptions options, const std::string& output,
                           double time_step, int64_t memory_limit_mib);

}  // namespace halogen::app
