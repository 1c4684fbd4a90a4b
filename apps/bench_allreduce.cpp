// `halogen bench allreduce`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_allreduce(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("allreduce", "allreduce benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench allreduce"); });
}

}  // namespace halogen::app
