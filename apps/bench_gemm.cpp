// `halogen bench gemm`: not built yet; the issue that builds it replaces this file.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_gemm(CLI::App& bench) {
  CLI::App* cmd = bench.add_subcommand("gemm", "gemm benchmark (not built yet)");
  cmd->callback([] { throw NotBuilt("halogen bench gemm"); });
}

}  // namespace halogen::app
