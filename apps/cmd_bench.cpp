// `halogen bench <name>`: microbenchmarks in the nccl-tests style. Each benchmark is its own bench_<name>.cpp.
#include "apps/bench.h"
#include "apps/commands.h"

namespace halogen::app {

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Microbenchmarks: spmm, gemm, halo, allreduce, epoch, partition; profile (for `halogen plan`)");
  bench->require_subcommand(1, 1);
  add_bench_spmm(*bench);
  add_bench_gemm(*bench);
  add_bench_halo(*bench);
  add_bench_allreduce(*bench);
  add_bench_epoch(*bench);
  add_bench_partition(*bench);
  add_bench_profile(*bench);
}

}  // namespace halogen::app
