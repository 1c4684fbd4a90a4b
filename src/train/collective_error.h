#pragma once
// Failing together. A step that may fail on some ranks only (reading this rank's shard, a checkpoint) runs
// inside run_collectively(): every rank runs it, then one allreduce says whether any rank failed. If one did,
// the failing ranks rethrow their own UserError and the others throw PeerFailed, so every rank leaves through
// the same path (exit 2) and none is left waiting in a later collective.
#include <functional>

#include "comm/communicator.h"
#include "core/error.h"

namespace halogen::train {

// Thrown on the ranks that did not fail themselves; `halogen train` exits 2 on them without a message.
class PeerFailed : public UserError {
 public:
  PeerFailed() : UserError("another rank failed (see its message)") {}
};

// Who prints when a step fails: every failing rank its own message (per-rank files), or only the lowest failing
// rank (a step that reads the same input on every rank, whose failures would repeat the same line P times).
enum class Report { every_failing_rank, lowest_failing_rank };

void run_collectively(comm::Communicator& comm, const std::function<void()>& step,
                      Report report = Report::every_failing_rank);

}  // namespace halogen::train
