#include "train/collective_error.h"

#include <exception>

namespace halogen::train {

void run_collectively(comm::Communicator& comm, const std::function<void()>& step, Report report) {
  std::exception_ptr failure;
  try {
    step();
  } catch (const UserError&) {
    failure = std::current_exception();
  } catch (const std::exception& e) {
    // Anything else (bad_alloc, HDF5 trouble) still must not leave the other ranks waiting.
    failure = std::make_exception_ptr(UserError(e.what()));
  }
  // One collective: the number of failing ranks and (as a max of size - rank) the lowest failing rank.
  double state[2] = {failure ? 1.0 : 0.0, failure ? static_cast<double>(comm.size() - comm.rank()) : 0.0};
  comm.allreduce_max(state, 2);
  if (state[0] == 0.0) return;
  const int lowest_failing = comm.size() - static_cast<int>(state[1]);
  if (failure && (report == Report::every_failing_rank || comm.rank() == lowest_failing))
    std::rethrow_exception(failure);
  throw PeerFailed();
}

}  // namespace halogen::train
