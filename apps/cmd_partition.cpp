// `halogen partition`: not built yet; the issue that builds it replaces this file.
#include "apps/commands.h"

namespace halogen::app {

void add_partition_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("partition", "Partition a graph file into one shard per rank (METIS k-way, random, contiguous)");
  cmd->callback([] { throw NotBuilt("halogen partition"); });
}

}  // namespace halogen::app
