// 64-bit counts (issue 18, item 3): a graph with more than 2^31 stored entries, made cheaply. The slicing of
// `--method ptscotch` runs on a synthetic indptr (no edges materialised) of 6e9 entries; the hyperslab reader
// reads rows whose entries start past 2^31 from a graph file whose /csr/indices has an extent of 2^31 + 8 but
// stores only its last chunk (HDF5 allocates chunks lazily: the file is a few MiB); METIS refuses that file from
// its header, naming --method ptscotch. Every check here fails if a count on the way were 32-bit.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/halo_plan.h"
#include "graph/shard.h"
#include "io/graph_file.h"
#include "io/h5.h"
#include "partition/graph_slice.h"
#include "partition/partition_dir.h"
#include "partition/test_graphs.h"

namespace halogen::partition {
namespace {

using partition_test::TempDir;

constexpr int64_t k2to31 = int64_t{1} << 31;

// The offsets a count passes through are int64 by type: narrowing one of them must fail to compile here.
static_assert(std::is_same_v<decltype(graph::Csr::indptr)::value_type, int64_t>);
static_assert(std::is_same_v<decltype(graph::Shard::indptr)::value_type, int64_t>);
static_assert(std::is_same_v<decltype(graph::HaloPlan::recv_offsets)::value_type, int64_t>);
static_assert(std::is_same_v<decltype(graph::HaloPlan::send_offsets)::value_type, int64_t>);
static_assert(std::is_same_v<decltype(GraphSlice::indptr)::value_type, int64_t>);

TEST(Int64Counts, BalancedSlicesOfSixBillionEntries) {
  // 3e9 vertices of degree 2 (6e9 entries), never materialised: indptr[v] = 2v. Rows + entries weigh 3 per
  // vertex, so K = 3 slices cut at exactly 1e9 and 2e9.
  const int64_t n = 3'000'000'000, e = 2 * n;
  const std::vector<int64_t> bounds = balanced_vertex_slices(n, e, 3, [](int64_t v) { return 2 * v; });
  EXPECT_EQ(bounds, (std::vector<int64_t>{0, 1'000'000'000, 2'000'000'000, n}));
  EXPECT_EQ(slice_of_vertex(bounds, 1'999'999'999), 1);
  EXPECT_EQ(slice_of_vertex(bounds, 2'000'000'000), 2);
}

TEST(Int64Counts, OneVertexHoldingMoreThanInt32Entries) {
  // Vertex 0 holds 2^32 entries, the other 3 none: the half-way target (2^31 + 2) lies inside vertex 0's row, so
  // slice 0 is vertex 0 alone. With 32-bit offsets 2^32 would wrap to 0 and every vertex would go to slice 1.
  const int64_t e = int64_t{1} << 32;
  const std::vector<int64_t> bounds = balanced_vertex_slices(4, e, 2, [&](int64_t v) { return v == 0 ? 0 : e; });
  EXPECT_EQ(bounds, (std::vector<int64_t>{0, 1, 4}));
}

// A graph file of 20 vertices whose /csr/indices has 2^31 + 8 entries: vertex 0 owns the first 2^31 (never
// written: unallocated chunks read as zeros), vertex 1 the columns {0, 2, 4, 6, 8}, vertex 2 {1, 5, 19}, the rest
// none. Written with the HDF5 C API: chunked with Fletcher-32 like every dataset h5::File writes.
std::string write_sparse_graph_file(const TempDir& dir) {
  const std::string path = dir.sub("huge.h5");
  const int64_t num_nodes = 20, num_entries = k2to31 + 8;
  {
    h5::File file(path, h5::Mode::create);
    file.set_attr("format", std::string("halogen.graph"));
    file.set_attr("version", io::kGraphFileVersion);
    file.set_attr("name", std::string("sparse-huge"));
    file.set_attr("num_nodes", num_nodes);
    file.set_attr("num_edges", num_entries);
    file.set_attr("directed", int64_t{0});
    file.set_attr("num_classes", int64_t{0});
    file.set_attr("num_features", int64_t{0});
    std::vector<int64_t> indptr(num_nodes + 1, num_entries);
    indptr[0] = 0;
    indptr[1] = k2to31;
    indptr[2] = k2to31 + 5;
    file.write("/csr/indptr", indptr);
    file.close();
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hsize_t extent = static_cast<hsize_t>(num_entries), chunk = 1 << 16;
  const hid_t space = H5Screate_simple(1, &extent, nullptr);
  const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(create, 1, &chunk);
  H5Pset_fletcher32(create);
  const hid_t group = H5Gopen2(file, "/csr", H5P_DEFAULT);
  const hid_t indices = H5Dcreate2(group, "indices", H5T_STD_I64LE, space, H5P_DEFAULT, create, H5P_DEFAULT);
  EXPECT_GE(indices, 0);
  const int64_t tail[8] = {0, 2, 4, 6, 8, 1, 5, 19};
  const hsize_t start = static_cast<hsize_t>(k2to31), count = 8;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  const hid_t memory = H5Screate_simple(1, &count, nullptr);
  EXPECT_GE(H5Dwrite(indices, H5T_NATIVE_INT64, memory, space, H5P_DEFAULT, tail), 0);
  H5Sclose(memory);
  H5Dclose(indices);
  H5Gclose(group);
  H5Pclose(create);
  H5Sclose(space);
  H5Fclose(file);
  return path;
}

TEST(Int64Counts, ReadsRowsWhoseEntriesStartPastInt32) {
  TempDir dir("int64");
  const std::string path = write_sparse_graph_file(dir);
  h5::File file(path, h5::Mode::read);
  EXPECT_EQ(file.shape("/csr/indices"), (std::vector<int64_t>{k2to31 + 8}));
  const int64_t num_entries = k2to31 + 8;
  // K = 2 over the real file: vertex 0 alone outweighs half of rows + entries.
  const std::vector<int64_t> bounds = balanced_vertex_slices(
      20, num_entries, 2, [&](int64_t v) { return file.read_rows<int64_t>("/csr/indptr", v, v + 1)[0]; });
  EXPECT_EQ(bounds, (std::vector<int64_t>{0, 1, 20}));
  const GraphSlice slice = read_graph_slice(file, 20, num_entries, 1, 20);
  EXPECT_EQ(slice.first_entry(), k2to31);
  ASSERT_EQ(slice.indices, (std::vector<int64_t>{0, 2, 4, 6, 8, 1, 5, 19}));
  EXPECT_EQ(slice.row_end(0) - slice.row_begin(0), 5);
  EXPECT_EQ(slice.row_end(1) - slice.row_begin(1), 3);
  EXPECT_EQ(slice.row_begin(2), slice.row_end(18));  // vertices 3..19: empty rows
}

TEST(Int64Counts, MetisRefusesFromTheHeaderNamingPtscotch) {
  TempDir dir("int64_metis");
  PartitionRequest request;
  request.graph_path = write_sparse_graph_file(dir);
  request.output_dir = dir.sub("out");
  request.options.num_parts = 2;
  try {
    partition_graph_file(request);  // must not read 16 GiB of indices first
    ADD_FAILURE() << "METIS accepted 2^31 + 8 entries";
  } catch (const UserError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("2147483656"), std::string::npos) << message;  // the entry count, not wrapped
    EXPECT_NE(message.find("--method ptscotch"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace halogen::partition
