// `halogen bench partition`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_partition(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("partition", "partition benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench partition"); });
}

}  // namespace halogen::app
