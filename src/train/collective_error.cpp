#include "train/collective_error.h"

#include <exception>

namespace halogen::train {

void run_collectively(comm::Communicator& comm, const std::function<void()>& step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (const UserError&) {
    failure = std::current_exception();
  } catch (const std::exception& e) {
    // Anything else (bad_alloc, HDF5 trouble) still must not leave the other ranks waiting.
    failure = std::make_exception_ptr(UserError(e.what()));
  }
  int64_t failed = failure ? 1 : 0;
  comm.allreduce_sum(&failed, 1);
  if (failure) std::rethrow_exception(failure);
  if (failed > 0) throw PeerFailed();
}

}  // namespace halogen::train
