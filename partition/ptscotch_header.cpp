// read_header (partition/ptscotch_header.h): the graph file's attributes, shapes and splits, checked.
#include "partition/ptscotch_header.h"

#include <algorithm>

#include "core/error.h"
#include "io/graph_file.h"
#include "io/h5.h"

namespace halogen::partition {

FileHeader read_header(const h5::File& file) {
  const char* path = file.path().c_str();
  io::check_graph_format(file);
  FileHeader h;
  h.name = file.has_attr("name") ? file.attr_string("name") : "";
  h.num_nodes = file.attr_int("num_nodes");
  h.num_edges = file.attr_int("num_edges");
  HALOGEN_USER_CHECK(h.num_nodes >= 0 && h.num_edges >= 0, "%s: attribute num_nodes or num_edges is negative",
                     path);
  const int64_t num_classes = file.attr_int("num_classes");
  HALOGEN_USER_CHECK(num_classes >= 0 && num_classes < (int64_t{1} << 31),
                     "%s: attribute num_classes %lld out of range", path,
                     static_cast<long long>(num_classes));
  h.num_classes = static_cast<int32_t>(num_classes);
  HALOGEN_USER_CHECK(
      file.attr_int("directed") == 0,
      "%s: --method ptscotch partitions undirected graphs; this one is directed (use --method metis)", path);
  HALOGEN_USER_CHECK(
      !file.exists("/snapshots"),
      "%s: --method ptscotch partitions static graphs; this one is dynamic (use --method metis)", path);
  const std::vector<int64_t> indptr = file.shape("/csr/indptr"), indices = file.shape("/csr/indices");
  HALOGEN_USER_CHECK(indptr.size() == 1 && indptr[0] == h.num_nodes + 1,
                     "%s: /csr/indptr: expected shape [%lld]", path, static_cast<long long>(h.num_nodes + 1));
  HALOGEN_USER_CHECK(indices.size() == 1 && indices[0] == h.num_edges,
                     "%s: attribute num_edges %lld != %lld entries in /csr/indices", path,
                     static_cast<long long>(h.num_edges),
                     static_cast<long long>(indices.empty() ? 0 : indices[0]));
  if (file.exists("/csr/weight"))
    HALOGEN_USER_CHECK(file.shape("/csr/weight") == indices, "%s: /csr/weight: expected shape [%lld]", path,
                       static_cast<long long>(h.num_edges));
  if (file.exists("/node/feat")) {
    const std::vector<int64_t> dims = file.shape("/node/feat");
    HALOGEN_USER_CHECK(dims.size() == 2 && dims[0] == h.num_nodes, "%s: /node/feat: expected shape [%lld, F]",
                       path, static_cast<long long>(h.num_nodes));
    HALOGEN_USER_CHECK(file.is_floating("/node/feat"), "%s: /node/feat: expected float32, found %s", path,
                       file.element_type("/node/feat").c_str());
    h.num_features = dims[1];
  }
  if (file.exists("/node/label")) {
    HALOGEN_USER_CHECK(!file.is_floating("/node/label"),
                       "%s: /node/label holds regression targets, which --method ptscotch does not partition "
                       "(use --method metis)",
                       path);
    HALOGEN_USER_CHECK(file.shape("/node/label") == std::vector<int64_t>{h.num_nodes},
                       "%s: /node/label: expected shape [%lld]", path, static_cast<long long>(h.num_nodes));
    h.has_labels = true;
  }
  for (const char* split : {"train", "valid", "test"}) {
    const std::string dataset = std::string("/split/") + split;
    std::vector<int64_t> ids;
    if (file.exists(dataset)) ids = file.read<int64_t>(dataset);
    std::vector<int64_t> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      HALOGEN_USER_CHECK(sorted[i] >= 0 && sorted[i] < h.num_nodes, "%s: %s: id %lld outside [0, %lld)", path,
                         dataset.c_str(), static_cast<long long>(sorted[i]),
                         static_cast<long long>(h.num_nodes));
      HALOGEN_USER_CHECK(i == 0 || sorted[i] != sorted[i - 1], "%s: %s: id %lld appears twice", path,
                         dataset.c_str(), static_cast<long long>(sorted[i]));
    }
    (split[1] == 'r' ? h.train : split[0] == 'v' ? h.valid : h.test) = std::move(sorted);
  }
  return h;
}

}  // namespace halogen::partition
