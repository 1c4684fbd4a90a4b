#pragma once
// Failing together during training: run_collectively (core/fail_together.h) over a comm::Communicator. A step
// that may fail on some ranks only (reading this rank's shard, a checkpoint) runs inside it; if any rank
// fails, the failing ranks rethrow their own UserError and the others throw PeerFailed, so every rank leaves
// through the same path (exit 2) and none is left waiting in a later collective.
#include <functional>

#include "comm/communicator.h"
#include "core/error.h"
#include "core/fail_together.h"

namespace halogen::train {

using halogen::PeerFailed;
using halogen::Report;

// Report::every_failing_rank or lowest_failing_rank (a Communicator has no string broadcast for the third).
void run_collectively(comm::Communicator& comm, const std::function<void()>& step,
                      Report report = Report::every_failing_rank);

}  // namespace halogen::train
