// `halogen generate`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_generate_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("generate", "Generate a synthetic graph file (SBM, RMAT, temporal SBM)");
  cmd->callback([] { throw NotBuilt("halogen generate"); });
}

}  // namespace halogen::app
