#pragma once
// Failing together. A step that may fail on some ranks only (reading this rank's shard, a checkpoint, a slice
// of a graph file) runs inside run_collectively(): every rank runs it, then one max-reduction says whether
// any rank failed. If one did, every rank throws, so every rank leaves through the same path and none is left
// waiting in a later collective. This is the one implementation of that policy; a communicator takes part
// through the small Vote interface below (train/collective_error.h adapts comm::Communicator,
// partition/slice_comm.h an MPI_Comm), so core needs no MPI.
#include <functional>
#include <string>

#include "core/error.h"

namespace halogen {

// Thrown on the ranks that did not fail themselves (Report::every_failing_rank, lowest_failing_rank); a
// command exits 2 on them without a message.
class PeerFailed : public UserError {
 public:
  PeerFailed() : UserError("another rank failed (see its message)") {}
};

// Who reports when a step fails.
enum class Report {
  every_failing_rank,   // each failing rank rethrows its own error (per-rank messages), the others PeerFailed
  lowest_failing_rank,  // only the lowest failing rank rethrows (a step that fails alike on every rank: one
                        // line, not P), the others PeerFailed
  lowest_on_every_rank,  // every rank throws the lowest failing rank's message as a UserError (a job whose
                         // rank 0 prints every message, e.g. `partition --method ptscotch`)
};

// What run_collectively needs of a communicator: its rank and size, an in-place maximum over all ranks, and
// (for Report::lowest_on_every_rank only) a broadcast of a string from one rank.
class Vote {
 public:
  virtual ~Vote() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void max(double* values, int count) = 0;
  virtual void broadcast(std::string& text, int root) = 0;
};

// Runs `step` on every rank. A UserError, std::bad_alloc (one "out of memory" line) or other std::exception
// on any rank is thrown on every rank as `report` says; a rank whose step succeeded returns only when all
// did. Collective: every rank of `vote` calls it with the same report.
void run_collectively(Vote& vote, const std::function<void()>& step, Report report);

}  // namespace halogen
