#pragma once
// The one check every reader makes before opening a file the user named: UserError "<path>: no such file"
// when nothing is there, "<path>: is a directory" when a directory was given where a file is expected, and
// "<path>: not a regular file" for anything else that cannot be read as one (a socket, a broken link).
#include <string>

namespace halogen::io {

void check_input_file(const std::string& path);

}  // namespace halogen::io
