// `halogen bench spmm`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_spmm(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("spmm", "spmm benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench spmm"); });
}

}  // namespace halogen::app
