#pragma once
// What every process of `--method ptscotch` reads of the graph file besides its slice
// (partition/graph_slice.h): the root attributes, the shapes of the datasets and the splits (whole, O(N)).
// Reading it also refuses what the method cannot partition: directed graphs, dynamic graphs (/snapshots),
// regression targets.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::h5 {
class File;
}

namespace halogen::partition {

struct FileHeader {
  std::string name;
  int64_t num_nodes = 0, num_edges = 0, num_features = 0;
  int32_t num_classes = 0;
  bool has_labels = false;
  std::vector<int64_t> train, valid, test;  // the splits, whole (O(N)), ascending
};

// Reads and checks the header of a graph file. UserError naming the file and what is wrong (or what this
// method cannot partition, with --method metis to use instead).
FileHeader read_header(const h5::File& file);

}  // namespace halogen::partition
