#include "comm/self_comm.h"

#include "core/error.h"
#include "core/runtime.h"

namespace halogen::comm {

std::unique_ptr<Request> SelfComm::start_exchange(const std::vector<Message>& sends,
                                                  const std::vector<Message>& receives, kernels::Stream) {
  HALOGEN_ASSERT(sends.empty() && receives.empty(), "a one-rank communicator has no peers");
  return std::make_unique<Request>();
}

std::unique_ptr<Request> SelfComm::start_allreduce_sum(float*, int64_t count, kernels::Stream) {
  HALOGEN_ASSERT(count >= 0);
  return std::make_unique<Request>();  // the sum over one rank is the data itself
}

void SelfComm::wait(std::unique_ptr<Request>, kernels::Stream) {}

void SelfComm::abort(int exit_code) { abort_job(exit_code); }

}  // namespace halogen::comm
