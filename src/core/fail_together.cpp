// run_collectively (core/fail_together.h): every rank runs the step, one max-reduction over three numbers
// says whether and where it failed, and every rank throws as the Report says.
#include "core/fail_together.h"

#include <exception>
#include <new>

#include "core/format.h"
#include "core/memory.h"

namespace halogen {

void run_collectively(Vote& vote, const std::function<void()>& step, Report report) {
  std::exception_ptr failure;
  std::string message;
  bool out_of_memory = false;
  try {
    step();
  } catch (const UserError& e) {
    failure = std::current_exception();
    message = e.what();
  } catch (const std::bad_alloc&) {
    // One line for the job, naming the phase and the plan: every rank of a uniform job fails alike.
    out_of_memory = true;
    message = out_of_memory_message();
    if (vote.size() > 1) message += strformat(" [rank %d of %d]", vote.rank(), vote.size());
    failure = std::make_exception_ptr(UserError(message));
  } catch (const std::exception& e) {
    // Anything else (HDF5 trouble) still must not leave the other ranks waiting.
    message = e.what();
    failure = std::make_exception_ptr(UserError(message));
  }
  // One collective: whether any rank failed, (as a max of size - rank) the lowest failing rank, and whether
  // any rank ran out of memory (then only the lowest failing rank reports).
  double state[3] = {failure ? 1.0 : 0.0, failure ? static_cast<double>(vote.size() - vote.rank()) : 0.0,
                     out_of_memory ? 1.0 : 0.0};
  vote.max(state, 3);
  if (state[0] == 0.0) return;
  const int lowest_failing = vote.size() - static_cast<int>(state[1]);
  if (report == Report::lowest_on_every_rank) {
    vote.broadcast(message, lowest_failing);
    if (vote.rank() == lowest_failing) std::rethrow_exception(failure);
    throw UserError(message);
  }
  if (state[2] != 0.0) report = Report::lowest_failing_rank;
  if (failure && (report == Report::every_failing_rank || vote.rank() == lowest_failing))
    std::rethrow_exception(failure);
  throw PeerFailed();
}

}  // namespace halogen
