// `halogen info`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_info_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("info", "Describe a graph file or partition directory");
  cmd->callback([] { throw NotBuilt("halogen info"); });
}

}  // namespace halogen::app
