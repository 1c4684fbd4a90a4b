#pragma once
// Zip archives (libzip): the bytes a full extraction needs, and extraction with each member's CRC-32 checked.
#include <cstdint>
#include <string>
#include <vector>

namespace halogen::download {

// Sum of the members' uncompressed sizes; UserError naming the archive when it is not a readable zip.
int64_t zip_unpacked_bytes(const std::string& archive);

// Extracts every member under `directory` (created). A member whose name leaves the directory (absolute, or
// with a ".." part) is refused; directories are created as needed. Returns the files written (relative names).
std::vector<std::string> extract_zip(const std::string& archive, const std::string& directory);

}  // namespace halogen::download
