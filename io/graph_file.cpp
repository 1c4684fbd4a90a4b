#include "io/graph_file.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "graph/build.h"
#include "io/atomic_file.h"
#include "io/file_format.h"
#include "io/h5.h"

namespace halogen::io {

namespace {

constexpr const char* kFormat = "halogen.graph";

std::string at(const std::string& where, const std::string& dataset) {
  return where + ": " + dataset + ": ";
}

std::string snapshot_group(size_t t) {
  return strformat("/snapshots/%05zu", t);
}

void validate_csr(const graph::Csr& csr, int64_t num_nodes, const std::string& where,
                  const std::string& group, bool check_symmetric) {
  const std::string indptr_name = group + "/indptr", indices_name = group + "/indices";
  HALOGEN_USER_CHECK(static_cast<int64_t>(csr.indptr.size()) == num_nodes + 1,
                     "%sexpected %lld entries (num_nodes + 1), found %zu", at(where, indptr_name).c_str(),
                     static_cast<long long>(num_nodes + 1), csr.indptr.size());
  HALOGEN_USER_CHECK(csr.indptr[0] == 0, "%sindex 0: must be 0, found %lld", at(where, indptr_name).c_str(),
                     static_cast<long long>(csr.indptr[0]));
  for (int64_t r = 0; r < num_nodes; ++r) {
    HALOGEN_USER_CHECK(csr.indptr[r + 1] >= csr.indptr[r], "%sindex %lld: decreases (%lld after %lld)",
                       at(where, indptr_name).c_str(), static_cast<long long>(r + 1),
                       static_cast<long long>(csr.indptr[r + 1]), static_cast<long long>(csr.indptr[r]));
  }
  HALOGEN_USER_CHECK(csr.indptr[num_nodes] == csr.nnz(), "%sindex %lld: last entry %lld != %lld edges in %s",
                     at(where, indptr_name).c_str(), static_cast<long long>(num_nodes),
                     static_cast<long long>(csr.indptr[num_nodes]), static_cast<long long>(csr.nnz()),
                     indices_name.c_str());
  // Rows in parallel; the first bad entry (smallest index) is reported.
  int64_t bad = csr.nnz();
#pragma omp parallel for schedule(dynamic, 4096) reduction(min : bad)
  for (int64_t r = 0; r < num_nodes; ++r) {
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) {
      const int64_t c = csr.indices[e];
      if (c < 0 || c >= num_nodes || (e > csr.indptr[r] && c <= csr.indices[e - 1])) {
        bad = std::min(bad, e);
        break;
      }
    }
  }
  if (bad < csr.nnz()) {
    const int64_t row = std::upper_bound(csr.indptr.begin(), csr.indptr.end(), bad) - csr.indptr.begin() - 1;
    const int64_t c = csr.indices[bad];
    if (c < 0 || c >= num_nodes) {
      throw UserError(strformat("%sindex %lld (row %lld): column %lld out of range [0, %lld)",
                                at(where, indices_name).c_str(), static_cast<long long>(bad),
                                static_cast<long long>(row), static_cast<long long>(c),
                                static_cast<long long>(num_nodes)));
    }
    throw UserError(strformat("%sindex %lld (row %lld): columns not sorted or duplicated (%lld after %lld)",
                              at(where, indices_name).c_str(), static_cast<long long>(bad),
                              static_cast<long long>(row), static_cast<long long>(c),
                              static_cast<long long>(csr.indices[bad - 1])));
  }
  if (csr.weighted()) {
    HALOGEN_USER_CHECK(csr.weight.size() == csr.indices.size(), "%sexpected %lld entries, found %zu",
                       at(where, group + "/weight").c_str(), static_cast<long long>(csr.nnz()),
                       csr.weight.size());
    for (size_t i = 0; i < csr.weight.size(); ++i) {
      HALOGEN_USER_CHECK(std::isfinite(csr.weight[i]), "%sindex %zu: not finite",
                         at(where, group + "/weight").c_str(), i);
    }
  }
  if (check_symmetric) {
    int64_t bad_row = 0, bad_entry = 0;
    if (!graph::is_symmetric(csr, &bad_row, &bad_entry)) {
      throw UserError(
          strformat("%sindex %lld: edge (%lld, %lld) has no reverse edge, but the graph is undirected",
                    at(where, indices_name).c_str(), static_cast<long long>(bad_entry),
                    static_cast<long long>(bad_row), static_cast<long long>(csr.indices[bad_entry])));
    }
  }
}

void validate_split(const std::vector<int64_t>& ids, int64_t num_nodes, const std::string& where,
                    const std::string& dataset) {
  for (size_t i = 0; i < ids.size(); ++i) {
    HALOGEN_USER_CHECK(ids[i] >= 0 && ids[i] < num_nodes, "%sindex %zu: node id %lld out of range [0, %lld)",
                       at(where, dataset).c_str(), i, static_cast<long long>(ids[i]),
                       static_cast<long long>(num_nodes));
  }
  std::vector<uint8_t> seen(static_cast<size_t>(num_nodes), 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    HALOGEN_USER_CHECK(!seen[ids[i]], "%sindex %zu: node id %lld appears twice", at(where, dataset).c_str(),
                       i, static_cast<long long>(ids[i]));
    seen[ids[i]] = 1;
  }
}

// Dynamic graphs: every snapshot is an N x N CSR with the checks of /csr (symmetric when the graph is
// undirected), every snapshot edge is an edge of the union graph /csr, and a [T, N] target series has one
// row per snapshot.
void validate_snapshots(const graph::Graph& g, const std::string& where) {
  const int64_t n = g.num_nodes;
  for (size_t t = 0; t < g.snapshots.size(); ++t) {
    const graph::Csr& snapshot = g.snapshots[t];
    const std::string group = snapshot_group(t);
    HALOGEN_USER_CHECK(snapshot.num_rows == n && snapshot.num_cols == n,
                       "%s: %s: snapshot has %lld x %lld nodes, but the graph has %lld (every snapshot must "
                       "span the same vertex set)",
                       where.c_str(), group.c_str(), static_cast<long long>(snapshot.num_rows),
                       static_cast<long long>(snapshot.num_cols), static_cast<long long>(n));
    validate_csr(snapshot, n, where, group, !g.directed);
    for (int64_t r = 0; r < n; ++r) {
      const int64_t* union_begin = g.adjacency.indices.data() + g.adjacency.indptr[r];
      const int64_t* union_end = g.adjacency.indices.data() + g.adjacency.indptr[r + 1];
      for (int64_t e = snapshot.indptr[r]; e < snapshot.indptr[r + 1]; ++e) {
        HALOGEN_USER_CHECK(std::binary_search(union_begin, union_end, snapshot.indices[e]),
                           "%sindex %lld: edge (%lld, %lld) is not in the union graph /csr",
                           at(where, group + "/indices").c_str(), static_cast<long long>(e),
                           static_cast<long long>(r), static_cast<long long>(snapshot.indices[e]));
      }
    }
  }
  if (!g.snapshots.empty() && !g.targets.empty() && g.target_steps > 1) {
    HALOGEN_USER_CHECK(g.target_steps == static_cast<int64_t>(g.snapshots.size()),
                       "%s: /node/label: %lld target steps, but %zu snapshots", where.c_str(),
                       static_cast<long long>(g.target_steps), g.snapshots.size());
  }
}

}  // namespace

SplitOverlap first_split_overlap(const std::vector<int64_t>* const (&splits)[3], int64_t n) {
  std::vector<uint8_t> in_split(static_cast<size_t>(n), 0);  // 1 + the split holding the id; 0: none
  for (int s = 0; s < 3; ++s) {
    for (size_t i = 0; i < splits[s]->size(); ++i) {
      const int64_t v = (*splits[s])[i];
      if (in_split[v] != 0) return {s, i, v, in_split[v] - 1};
      in_split[v] = static_cast<uint8_t>(s + 1);
    }
  }
  return {};
}

void validate_graph(const graph::Graph& g, const std::string& where) {
  const int64_t n = g.num_nodes;
  HALOGEN_USER_CHECK(n >= 0, "%s: num_nodes %lld is negative", where.c_str(), static_cast<long long>(n));
  HALOGEN_USER_CHECK(g.num_classes >= 0, "%s: num_classes %d is negative", where.c_str(), g.num_classes);
  HALOGEN_USER_CHECK(
      g.adjacency.num_rows == n && g.adjacency.num_cols == n, "%s: /csr: shape %lldx%lld, expected %lldx%lld",
      where.c_str(), static_cast<long long>(g.adjacency.num_rows),
      static_cast<long long>(g.adjacency.num_cols), static_cast<long long>(n), static_cast<long long>(n));
  validate_csr(g.adjacency, n, where, "/csr", !g.directed);

  HALOGEN_USER_CHECK(g.num_features >= 0, "%s: num_features is negative", where.c_str());
  HALOGEN_USER_CHECK(static_cast<int64_t>(g.features.size()) == n * g.num_features,
                     "%sexpected %lld x %lld values, found %zu", at(where, "/node/feat").c_str(),
                     static_cast<long long>(n), static_cast<long long>(g.num_features), g.features.size());
  {
    int64_t bad = static_cast<int64_t>(g.features.size());
    const int64_t size = bad;
#pragma omp parallel for schedule(static) reduction(min : bad)
    for (int64_t i = 0; i < size; ++i) {
      if (!std::isfinite(g.features[i])) bad = std::min(bad, i);
    }
    HALOGEN_USER_CHECK(bad == size, "%srow %lld, column %lld: not finite", at(where, "/node/feat").c_str(),
                       static_cast<long long>(bad / std::max<int64_t>(g.num_features, 1)),
                       static_cast<long long>(bad % std::max<int64_t>(g.num_features, 1)));
  }
  if (!g.labels.empty()) {
    HALOGEN_USER_CHECK(static_cast<int64_t>(g.labels.size()) == n, "%sexpected %lld entries, found %zu",
                       at(where, "/node/label").c_str(), static_cast<long long>(n), g.labels.size());
    for (int64_t v = 0; v < n; ++v) {
      HALOGEN_USER_CHECK(g.labels[v] >= -1 && g.labels[v] < g.num_classes,
                         "%sindex %lld: label %d out of range [-1, %d) (num_classes %d)",
                         at(where, "/node/label").c_str(), static_cast<long long>(v), g.labels[v],
                         g.num_classes, g.num_classes);
    }
  }
  if (!g.targets.empty()) {
    HALOGEN_USER_CHECK(g.labels.empty(), "%s: both class labels and regression targets set", where.c_str());
    HALOGEN_USER_CHECK(g.target_steps >= 1 && static_cast<int64_t>(g.targets.size()) == g.target_steps * n,
                       "%sexpected %lld x %lld values, found %zu", at(where, "/node/label").c_str(),
                       static_cast<long long>(g.target_steps), static_cast<long long>(n), g.targets.size());
    for (size_t i = 0; i < g.targets.size(); ++i) {
      HALOGEN_USER_CHECK(std::isfinite(g.targets[i]), "%sindex %zu: not finite",
                         at(where, "/node/label").c_str(), i);
    }
  }
  const graph::Graph::TargetPreprocess& pre = g.preprocess;
  if (!pre.name.empty()) {
    HALOGEN_USER_CHECK(!g.targets.empty(), "%s: /node/label: a preprocess record (\"%s\") without targets",
                       where.c_str(), pre.name.c_str());
    HALOGEN_USER_CHECK(pre.offset.size() == pre.scale.size() &&
                           (pre.offset.empty() || static_cast<int64_t>(pre.offset.size()) == n),
                       "%s: expected %lld values each, found %zu and %zu",
                       at(where, "/node/label_offset and /node/label_scale").c_str(), static_cast<long long>(n),
                       pre.offset.size(), pre.scale.size());
    for (size_t v = 0; v < pre.scale.size(); ++v) {
      HALOGEN_USER_CHECK(std::isfinite(pre.offset[v]), "%sindex %zu: not finite",
                         at(where, "/node/label_offset").c_str(), v);
      HALOGEN_USER_CHECK(std::isfinite(pre.scale[v]) && pre.scale[v] > 0, "%sindex %zu: %g is not positive",
                         at(where, "/node/label_scale").c_str(), v, pre.scale[v]);
    }
  }
  validate_split(g.train, n, where, "/split/train");
  validate_split(g.valid, n, where, "/split/valid");
  validate_split(g.test, n, where, "/split/test");
  const std::vector<int64_t>* const splits[3] = {&g.train, &g.valid, &g.test};
  if (const SplitOverlap o = first_split_overlap(splits, n); o.split >= 0) {
    HALOGEN_USER_CHECK(false, "%sindex %zu: node id %lld is also in %s (splits must be disjoint)",
                       at(where, kSplitPaths[o.split]).c_str(), o.index, static_cast<long long>(o.id),
                       kSplitPaths[o.earlier]);
  }
  if (!g.orig_id.empty()) {
    HALOGEN_USER_CHECK(static_cast<int64_t>(g.orig_id.size()) == n, "%sexpected %lld entries, found %zu",
                       at(where, "/node/orig_id").c_str(), static_cast<long long>(n), g.orig_id.size());
  }
  validate_snapshots(g, where);
}

namespace {}  // namespace

bool features_compress_well(const float* features, int64_t count) {
  const uLong sample =
      static_cast<uLong>(std::min<int64_t>(count * static_cast<int64_t>(sizeof(float)), 1 << 20));
  if (sample < 4096) return false;
  std::vector<Bytef> out(compressBound(sample));
  uLongf out_size = static_cast<uLongf>(out.size());
  if (compress2(out.data(), &out_size, reinterpret_cast<const Bytef*>(features), sample, 1) != Z_OK)
    return false;
  return out_size * 2 < sample;
}

void write_graph_attributes(h5::File& file, const std::string& name, int64_t num_nodes, int64_t num_edges,
                            bool directed, int64_t num_classes, int64_t num_features) {
  write_format(file, kFormat, kGraphFileVersion);
  file.set_attr("name", name);
  file.set_attr("num_nodes", num_nodes);
  file.set_attr("num_edges", num_edges);
  file.set_attr("directed", static_cast<int64_t>(directed ? 1 : 0));
  file.set_attr("num_classes", num_classes);
  file.set_attr("num_features", num_features);
}

namespace {

void write_csr(h5::File& file, const std::string& group, const graph::Csr& csr) {
  file.write(group + "/indptr", csr.indptr);
  file.write(group + "/indices", csr.indices);
  if (csr.weighted()) file.write(group + "/weight", csr.weight);
}

graph::Csr read_csr(const h5::File& file, const std::string& group, int64_t num_nodes) {
  graph::Csr csr;
  csr.num_rows = csr.num_cols = num_nodes;
  std::vector<int64_t> dims;
  csr.indptr = file.read<int64_t>(group + "/indptr", &dims);
  if (dims.size() != 1 || dims[0] != num_nodes + 1) {
    std::string found = "[";
    for (size_t i = 0; i < dims.size(); ++i) found += (i ? "," : "") + std::to_string(dims[i]);
    throw UserError(strformat("%s: %s/indptr: expected shape [%lld], found %s] (num_nodes %lld)",
                              file.path().c_str(), group.c_str(), static_cast<long long>(num_nodes + 1),
                              found.c_str(), static_cast<long long>(num_nodes)));
  }
  csr.indices = file.read<int64_t>(group + "/indices", &dims);
  HALOGEN_USER_CHECK(dims.size() == 1, "%s: %s/indices: expected 1-d", file.path().c_str(), group.c_str());
  if (file.exists(group + "/weight")) csr.weight = file.read<float>(group + "/weight");
  return csr;
}

}  // namespace

void write_graph(const std::string& path, const graph::Graph& g) {
  validate_graph(g, path);
  write_atomically(path, [&](const std::string& temporary) {
    h5::File file(temporary, h5::Mode::create);
    write_graph_attributes(file, g.name, g.num_nodes, g.num_edges(), g.directed, g.num_classes,
                           g.num_features);
    write_csr(file, "/csr", g.adjacency);
    if (g.num_features > 0) {
      file.write("/node/feat", g.features.data(), {g.num_nodes, g.num_features},
                 features_compress_well(g.features.data(), static_cast<int64_t>(g.features.size())));
    }
    if (!g.labels.empty()) file.write("/node/label", g.labels);
    if (!g.targets.empty()) {
      if (g.target_steps == 1)
        file.write("/node/label", g.targets.data(), {g.num_nodes});
      else
        file.write("/node/label", g.targets.data(), {g.target_steps, g.num_nodes});
      if (!g.preprocess.name.empty()) {  // convert --preprocess: what the stored values are
        file.set_attr("preprocess", g.preprocess.name, "/node/label");
        file.set_attr("preprocess_formula", g.preprocess.formula, "/node/label");
        if (!g.preprocess.scale.empty()) {
          file.write("/node/label_offset", g.preprocess.offset);
          file.write("/node/label_scale", g.preprocess.scale);
        }
      }
    }
    if (!g.orig_id.empty()) file.write("/node/orig_id", g.orig_id);
    file.write("/split/train", g.train);
    file.write("/split/valid", g.valid);
    file.write("/split/test", g.test);
    for (size_t t = 0; t < g.snapshots.size(); ++t) write_csr(file, snapshot_group(t), g.snapshots[t]);
    file.close();
  });
}

void check_graph_format(const h5::File& file) {
  const char* path = file.path().c_str();
  HALOGEN_USER_CHECK(read_format(file) == kFormat,
                     "%s: not a Halogen graph file (root attribute format is not \"%s\")", path, kFormat);
  const int64_t version = read_format_version(file);
  HALOGEN_USER_CHECK(version != -1, "%s: root attribute format_version missing", path);
  HALOGEN_USER_CHECK(version != 1,
                     "%s: graph file version 1, written by an older Halogen without checksums: convert or "
                     "generate it again with this version (`halogen convert` / `halogen generate`)",
                     path);
  HALOGEN_USER_CHECK(version == kGraphFileVersion,
                     "%s: graph file version %lld is not supported (this build reads %lld)", path,
                     static_cast<long long>(version), static_cast<long long>(kGraphFileVersion));
}

namespace {

graph::Graph read_graph_file(const std::string& path, bool with_features) {
  h5::File file(path, h5::Mode::read);
  check_graph_format(file);
  graph::Graph g;
  g.name = file.has_attr("name") ? file.attr_string("name") : "";
  g.num_nodes = file.attr_int("num_nodes");
  HALOGEN_USER_CHECK(g.num_nodes >= 0, "%s: attribute num_nodes is negative", path.c_str());
  g.directed = file.attr_int("directed") != 0;
  const int64_t num_classes = file.attr_int("num_classes");
  HALOGEN_USER_CHECK(num_classes >= 0 && num_classes < (int64_t{1} << 31),
                     "%s: attribute num_classes %lld out of range", path.c_str(),
                     static_cast<long long>(num_classes));
  g.num_classes = static_cast<int32_t>(num_classes);

  g.adjacency = read_csr(file, "/csr", g.num_nodes);
  const int64_t num_edges = file.attr_int("num_edges");
  HALOGEN_USER_CHECK(num_edges == g.adjacency.nnz(),
                     "%s: attribute num_edges %lld != %lld entries in /csr/indices", path.c_str(),
                     static_cast<long long>(num_edges), static_cast<long long>(g.adjacency.nnz()));

  std::vector<int64_t> dims;
  if (file.exists("/node/feat") && !with_features) {
    dims = file.shape("/node/feat");
    HALOGEN_USER_CHECK(dims.size() == 2 && dims[0] == g.num_nodes, "%s: /node/feat: expected shape [%lld, F]",
                       path.c_str(), static_cast<long long>(g.num_nodes));
    HALOGEN_USER_CHECK(file.is_floating("/node/feat"), "%s: /node/feat: expected float32, found %s",
                       path.c_str(), file.element_type("/node/feat").c_str());
    g.num_features = dims[1];
  } else if (file.exists("/node/feat")) {
    g.features = file.read<float>("/node/feat", &dims);
    HALOGEN_USER_CHECK(dims.size() == 2 && dims[0] == g.num_nodes, "%s: /node/feat: expected shape [%lld, F]",
                       path.c_str(), static_cast<long long>(g.num_nodes));
    g.num_features = dims[1];
  }
  if (file.exists("/node/label")) {
    if (file.is_floating("/node/label")) {
      g.targets = file.read<float>("/node/label", &dims);
      HALOGEN_USER_CHECK(
          (dims.size() == 1 && dims[0] == g.num_nodes) || (dims.size() == 2 && dims[1] == g.num_nodes),
          "%s: /node/label: expected shape [%lld] or [T, %lld]", path.c_str(),
          static_cast<long long>(g.num_nodes), static_cast<long long>(g.num_nodes));
      g.target_steps = dims.size() == 1 ? 1 : dims[0];
      if (file.has_attr("preprocess", "/node/label")) {
        g.preprocess.name = file.attr_string("preprocess", "/node/label");
        if (file.has_attr("preprocess_formula", "/node/label"))
          g.preprocess.formula = file.attr_string("preprocess_formula", "/node/label");
        if (file.exists("/node/label_scale")) {
          g.preprocess.offset = file.read<double>("/node/label_offset");
          g.preprocess.scale = file.read<double>("/node/label_scale");
        }
      }
    } else {
      g.labels = file.read<int32_t>("/node/label", &dims);
      HALOGEN_USER_CHECK(dims.size() == 1, "%s: /node/label: expected shape [%lld]", path.c_str(),
                         static_cast<long long>(g.num_nodes));
    }
  }
  if (file.exists("/node/orig_id")) g.orig_id = file.read<int64_t>("/node/orig_id");
  for (const char* split : {"train", "valid", "test"}) {
    const std::string dataset = std::string("/split/") + split;
    std::vector<int64_t> ids;
    if (file.exists(dataset)) {
      ids = file.read<int64_t>(dataset, &dims);
      HALOGEN_USER_CHECK(dims.size() == 1, "%s: %s: expected 1-d", path.c_str(), dataset.c_str());
    }
    (split[1] == 'r' ? g.train : split[0] == 'v' ? g.valid : g.test) = std::move(ids);
  }
  if (file.exists("/snapshots")) {
    const std::vector<std::string> steps = file.list("/snapshots");
    for (size_t t = 0; t < steps.size(); ++t) {
      HALOGEN_USER_CHECK(steps[t] == strformat("%05zu", t), "%s: /snapshots/%s: expected /snapshots/%05zu",
                         path.c_str(), steps[t].c_str(), t);
      g.snapshots.push_back(read_csr(file, snapshot_group(t), g.num_nodes));
    }
  }
  if (with_features) {
    validate_graph(g, path);
  } else {  // validate_graph expects features of N x num_features values: check the rest without them
    const int64_t num_features = g.num_features;
    g.num_features = 0;
    validate_graph(g, path);
    g.num_features = num_features;
  }
  return g;
}

}  // namespace

graph::Graph read_graph(const std::string& path) {
  return read_graph_file(path, true);
}

graph::Graph read_graph_without_features(const std::string& path) {
  return read_graph_file(path, false);
}

}  // namespace halogen::io
