// Memory planned before allocation (core/memory.h, io/declared_sizes.h) and the JSON message cleanup
// (io/json_text.h): the checks that turn an absurd declared size into one UserError.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/memory.h"
#include "io/declared_sizes.h"
#include "io/json_text.h"
#include "input_test_util.h"

namespace halogen {
namespace {

using test::message_of;

// Sets HALOGEN_MEMORY_AVAILABLE_MIB for one test and restores the environment after it.
class ForcedMemory {
 public:
  explicit ForcedMemory(const char* mib) { setenv("HALOGEN_MEMORY_AVAILABLE_MIB", mib, 1); }
  ~ForcedMemory() { unsetenv("HALOGEN_MEMORY_AVAILABLE_MIB"); }
};

TEST(Memory, SaturatingBytesNeverWraps) {
  EXPECT_EQ(saturating_bytes(3, 8), 24);
  EXPECT_EQ(saturating_bytes(int64_t{1} << 40, int64_t{1} << 40), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturating_bytes(-1, 8), 0);
}

TEST(Memory, OverrideReplacesTheMeasurement) {
  ForcedMemory forced("64");
  EXPECT_EQ(available_memory_bytes(), int64_t{64} << 20);
  check_memory_fits(int64_t{64} << 20, "exactly the available memory");  // fits: no throw
  EXPECT_EQ(message_of([] { check_memory_fits((int64_t{64} << 20) + 1, "x.mtx: a graph", "hint"); }),
            "x.mtx: a graph needs 64.0 MiB, but only 64.0 MiB of memory is available (hint)");
}

TEST(Memory, MeasuredOnLinux) {
  unsetenv("HALOGEN_MEMORY_AVAILABLE_MIB");
  EXPECT_GT(available_memory_bytes(), 0);  // /proc/meminfo exists wherever the suite runs
}

TEST(DeclaredSizes, IsolatedVertexBound) {
  ForcedMemory forced("1024");
  // 2 endpoints per edge plus 2^24 isolated vertices is the most a size line may declare.
  io::check_declared_graph("x.mtx: line 2: ", "the size line", 2 * 5 + io::kMaxIsolatedVertices, 5);
  EXPECT_EQ(
      message_of([] { io::check_declared_graph("x.mtx: line 2: ", "the size line", int64_t{1} << 28, 1); }),
      "x.mtx: line 2: the size line declares 268435456 vertices, but its 1 edges touch at most 2 of them; "
      "more than 16777216 isolated vertices are taken for a corrupt size");
}

TEST(DeclaredSizes, MemoryBound) {
  ForcedMemory forced("1");
  // 1000 vertices, 10^5 edges: ~4.4 MB of CSR build, more than 1 MiB.
  const std::string message =
      message_of([] { io::check_declared_graph("g: ", "num-node-list", 1000, 100000); });
  EXPECT_EQ(message.rfind("g: a graph of 1000 vertices and 100000 edges needs ", 0), 0u) << message;
}

TEST(DeclaredSizes, ReserveHintIsBoundedByTheFile) {
  EXPECT_EQ(io::reserve_hint(int64_t{1} << 50, 4096), 4096);
  EXPECT_EQ(io::reserve_hint(10, 4096), 10);
  EXPECT_EQ(io::reserve_hint(-5, 4096), 0);
}

TEST(JsonText, StripsTheLibraryPrefix) {
  EXPECT_EQ(io::json_reason("[json.exception.out_of_range.406] number overflow parsing '1e400'"),
            "number overflow parsing '1e400'");
  EXPECT_EQ(io::json_reason("plain"), "plain");
}

}  // namespace
}  // namespace halogen
