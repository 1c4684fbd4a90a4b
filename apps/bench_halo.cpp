// `halogen bench halo`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_halo(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("halo", "halo benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench halo"); });
}

}  // namespace halogen::app
