// io/convert_chunked.h: the external sort (runs spilled, merged in several passes when the fan-in is small)
// gives exactly build_csr's entries; run files are removed; the budget's high-water mark counts the buffers.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "core/rng.h"
#include "graph/build.h"
#include "io/convert_chunked.h"
#include "temp_dir_util.h"

namespace fs = std::filesystem;
using halogen::io::BufferBudget;
using halogen::io::EntrySorter;
using halogen::io::HeldBytes;

namespace {

// Entries of build_csr(n, edges) as (row, col) pairs, row-major.
std::vector<std::pair<int64_t, int64_t>> reference(int64_t n, const halogen::graph::EdgeList& edges,
                                                   bool symmetrize) {
  halogen::graph::BuildOptions options;
  options.symmetrize = symmetrize;
  const halogen::graph::Csr csr = halogen::graph::build_csr(n, edges, options);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = csr.indptr[r]; e < csr.indptr[r + 1]; ++e) out.emplace_back(r, csr.indices[e]);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> sorted_externally(const std::string& output, int64_t n,
                                                           const halogen::graph::EdgeList& edges,
                                                           bool symmetrize, int64_t buffer_bytes,
                                                           int64_t free_for_merge, int64_t* runs,
                                                           int64_t* high_water) {
  BufferBudget budget(int64_t{64} << 20);
  std::vector<std::pair<int64_t, int64_t>> out;
  {
    EntrySorter sorter(output, budget, buffer_bytes, symmetrize);
    for (int64_t i = 0; i < edges.size(); ++i) sorter.add_edge(edges.src[i], edges.dst[i]);
    *runs = sorter.runs_spilled();
    sorter.finish_input();
    // Leaves `free_for_merge` bytes of the budget to the merge, so its fan-in is small.
    const HeldBytes hog(budget, budget.free_bytes() - free_for_merge);
    sorter.merge([&](int64_t row, int64_t col) { out.emplace_back(row, col); });
    (void)n;
  }
  *high_water = budget.high_water_bytes();
  return out;
}

halogen::graph::EdgeList random_edges(int64_t n, int64_t count, uint64_t seed) {
  halogen::graph::EdgeList edges;
  for (int64_t i = 0; i < count; ++i) {
    // Few distinct ids: many duplicates and self-loops, across runs.
    edges.src.push_back(
        static_cast<int64_t>(halogen::rng::uniform_u64(seed, 1, static_cast<uint64_t>(i)) % n));
    edges.dst.push_back(
        static_cast<int64_t>(halogen::rng::uniform_u64(seed, 2, static_cast<uint64_t>(i)) % n));
  }
  return edges;
}

}  // namespace

TEST(EntrySorter, MultiPassMergeEqualsBuildCsr) {
  const fs::path dir = halogen::test::test_temp_dir("entry_sorter");
  const std::string output = (dir / "g.h5").string();
  const int64_t n = 300;
  const halogen::graph::EdgeList edges = random_edges(n, 20000, 7);
  for (const bool symmetrize : {true, false}) {
    int64_t runs = 0, high_water = 0;
    // 1 KiB buffers: 64 entries per run, hundreds of runs; 200 KiB for the merge: fan-in 2, so several
    // passes.
    const auto got = sorted_externally(output, n, edges, symmetrize, 1024, 200 << 10, &runs, &high_water);
    EXPECT_GT(runs, 100);
    EXPECT_EQ(got, reference(n, edges, symmetrize));
    // Every scratch file is gone (only the directory remains, empty).
    EXPECT_TRUE(fs::is_empty(dir));
  }
  int64_t runs = 0, high_water = 0;
  // Everything fits: no run at all, the same entries.
  const auto got = sorted_externally(output, n, edges, true, 1 << 20, 1 << 20, &runs, &high_water);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(got, reference(n, edges, true));
  fs::remove_all(dir);
}

TEST(EntrySorter, InMemorySortEqualsBuildCsrForAnyIdWidth) {
  // Everything fits: the buffer is radix sorted when row and column fit in one 64-bit key (small ids, ids
  // near 2^31: a 62-bit key), else comparison sorted (ids near 2^40); the same entries either way.
  const fs::path dir = halogen::test::test_temp_dir("entry_sorter_wide");
  const std::string output = (dir / "g.h5").string();
  for (const int64_t offset : {int64_t{0}, (int64_t{1} << 31) - 500, int64_t{1} << 40}) {
    SCOPED_TRACE(offset);
    halogen::graph::EdgeList edges = random_edges(300, 20000, 11);
    BufferBudget budget(int64_t{64} << 20);
    EntrySorter sorter(output, budget, int64_t{32} << 20, false);
    for (int64_t i = 0; i < edges.size(); ++i) sorter.add_edge(edges.src[i] + offset, edges.dst[i] + offset);
    sorter.finish_input();
    ASSERT_TRUE(sorter.fitted());
    std::vector<std::pair<int64_t, int64_t>> got;
    for (const halogen::io::Entry& e : sorter.sorted_entries())
      got.emplace_back(e.row - offset, e.col - offset);
    EXPECT_EQ(got, reference(300, edges, false));
  }
  fs::remove_all(dir);
}

TEST(BufferBudget, HighWaterMarkAndHeldBytes) {
  BufferBudget budget(100);
  {
    HeldBytes a(budget, 60);
    HeldBytes b(budget, 30);
    b.set(10);
    EXPECT_EQ(budget.held_bytes(), 70);
    EXPECT_EQ(budget.free_bytes(), 30);
  }
  EXPECT_EQ(budget.held_bytes(), 0);
  EXPECT_EQ(budget.high_water_bytes(), 90);  // 60 + 30, before b shrank to 10
}
