#pragma once
// What this build is: the project version (CMakeLists.txt's project()) and the source commit
// (`git describe --always --dirty` at build time; "unknown" when built outside a git checkout). Recorded in
// the metrics header of `halogen train` (train/metrics.h) so that a run says which code produced it.
namespace halogen {

const char* build_version();  // e.g. "0.1.0"
const char* build_commit();   // e.g. "fb3917d" or "fb3917d-dirty"; "unknown"

}  // namespace halogen
