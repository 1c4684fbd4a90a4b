// `halogen bench epoch`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_epoch(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("epoch", "epoch benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench epoch"); });
}

}  // namespace halogen::app
