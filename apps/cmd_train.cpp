// `halogen train`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_train_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("train", "Train a GNN on a partition directory (run under mpirun/srun, one rank per part)");
  cmd->callback([] { throw NotBuilt("halogen train"); });
}

}  // namespace halogen::app
