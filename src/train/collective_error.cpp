#include "train/collective_error.h"

#include <exception>
#include <new>
#include <string>

#include "core/format.h"
#include "core/memory.h"

namespace halogen::train {

void run_collectively(comm::Communicator& comm, const std::function<void()>& step, Report report) {
  std::exception_ptr failure;
  bool out_of_memory = false;
  try {
    step();
  } catch (const UserError&) {
    failure = std::current_exception();
  } catch (const std::bad_alloc&) {
    // One line for the job, naming the phase and the plan: every rank of a uniform job fails alike.
    out_of_memory = true;
    std::string line = out_of_memory_message();
    if (comm.size() > 1) line += strformat(" [rank %d of %d]", comm.rank(), comm.size());
    failure = std::make_exception_ptr(UserError(line));
  } catch (const std::exception& e) {
    // Anything else (HDF5 trouble) still must not leave the other ranks waiting.
    failure = std::make_exception_ptr(UserError(e.what()));
  }
  // One collective: whether any rank failed, (as a max of size - rank) the lowest failing rank, and whether any
  // rank ran out of memory (then only the lowest failing rank reports).
  double state[3] = {failure ? 1.0 : 0.0, failure ? static_cast<double>(comm.size() - comm.rank()) : 0.0,
                     out_of_memory ? 1.0 : 0.0};
  comm.allreduce_max(state, 3);
  if (state[0] == 0.0) return;
  if (state[2] != 0.0) report = Report::lowest_failing_rank;
  const int lowest_failing = comm.size() - static_cast<int>(state[1]);
  if (failure && (report == Report::every_failing_rank || comm.rank() == lowest_failing))
    std::rethrow_exception(failure);
  throw PeerFailed();
}

}  // namespace halogen::train
