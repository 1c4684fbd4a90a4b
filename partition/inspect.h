#pragma once
// `halogen info DIR [--check]`: describe a partition directory, and with check=true verify every invariant
// of its shards against the graph file it was made from. Throws UserError naming the file and the first
// violated invariant.
#include <string>

namespace halogen::partition {

void describe_partition_dir(const std::string& dir, bool check);

}  // namespace halogen::partition
