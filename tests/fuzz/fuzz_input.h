#pragma once
// What every fuzz target shares: the readers take paths, so an input is written to a file first (one scratch
// directory per process, under $TMPDIR), and sizes are planned against a fixed 1 GiB of "available" memory so
// a declared size the readers accept stays far below libFuzzer's -rss_limit_mb.
#include <cstddef>
#include <cstdint>
#include <string>

namespace halogen::fuzz {

// The scratch directory of this process (created on first use).
const std::string& scratch_dir();

// Writes bytes to scratch_dir()/name and returns the path.
std::string write_file(const std::string& name, const uint8_t* data, size_t size);

// Sets HALOGEN_MEMORY_AVAILABLE_MIB=1024 (call from LLVMFuzzerInitialize).
void fix_available_memory();

}  // namespace halogen::fuzz
