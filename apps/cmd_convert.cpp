// `halogen convert`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_convert_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("convert", "Convert a published dataset (OGB, SNAP, Matrix Market, npz) into a Halogen graph file");
  cmd->callback([] { throw NotBuilt("halogen convert"); });
}

}  // namespace halogen::app
