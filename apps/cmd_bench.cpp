// `halogen bench`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "Microbenchmarks: spmm, gemm, halo, allreduce, epoch");
  cmd->callback([] { throw NotBuilt("halogen bench"); });
}

}  // namespace halogen::app
