// `halogen download NAME`: a published dataset by name -> verified files in a cache -> graph file.
#include <string>

#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "download/download.h"

namespace halogen::app {

void add_download_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "download",
      "Fetch a published dataset by name (halogen download --list), verify it (size, SHA-256), unpack it and "
      "convert it into a graph file, ready for partition");
  static download::DownloadOptions options;
  static bool list = false;
  static int64_t memory_limit_mib = 0;
  cmd->add_option("name", options.name, "Dataset name, e.g. ogbn-products, reddit, cora, chickenpox");
  cmd->add_flag("--list", list, "Print every name with its download size, vertices, edges and source, and exit");
  cmd->add_option("-o,--output", options.output, "Graph file to write (default: DATA_DIR/NAME.h5)");
  cmd->add_option("--data-dir", options.data_dir,
                  "Cache directory for downloads and verification records (default: $HALOGEN_DATA, else "
                  "~/.cache/halogen)");
  cmd->add_flag("--keep-archive", options.keep_archive,
                "Keep the verified downloaded files in DATA_DIR/NAME/ after converting (a later download of "
                "the name converts again without fetching)");
  cmd->add_option("--mirror", options.mirror,
                  "Fetch each file from BASE/ + its published file name (e.g. BASE/arxiv.zip, BASE/ind.cora.x); BASE "
                  "may be http://, https:// or file:// (a local copy)");
  cmd->add_option("--checksums", options.checksums,
                  "SHA256SUMS file (\"HEX  NAME\" lines) replacing the built-in hashes and sizes (private mirrors)");
  cmd->add_option("--retries", options.transfer.retries,
                  "Failed attempts in a row (no new byte) retried before giving up")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--retry-wait", options.transfer.retry_wait_s,
                  "Seconds before the first retry; doubles each time, at most 60")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--memory-limit", memory_limit_mib,
                  "OGB and SNAP datasets: data buffers of the conversion within this many MiB (halogen "
                  "convert --memory-limit; 0: 3/4 of the available memory)")
      ->check(non_negative())
      ->capture_default_str();
  cmd->callback([] {
    if (list) {
      std::fputs(download::catalog_listing().c_str(), stdout);
      return;
    }
    HALOGEN_USER_CHECK(!options.name.empty(), "download: give a dataset name (halogen download --list shows them)");
    const interrupt::Guard guard("download");  // a killed transfer keeps its partial file: the next run resumes
    const download::DownloadResult r = download::download_dataset(
        options, [](const std::string& format, const std::string& input, const std::string& output,
                    const std::string& name) {
          io::ConvertOptions convert;
          convert.input = input;
          convert.name = name;
          const bool bounded = format == "ogb" || format == "npz" || format == "snap";
          convert_to_graph_file(format, convert, output, 0.0, bounded ? memory_limit_mib : 0);
        });
    if (!r.up_to_date)
      log::info(strformat("%s: ready; next: halogen partition %s -k 4 -o %s.p4", options.name.c_str(),
                          r.output.c_str(), options.name.c_str()));
  });
}

}  // namespace halogen::app
