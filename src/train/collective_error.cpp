// The Communicator side of run_collectively: its rank, size and host max-allreduce are all the vote needs.
#include "train/collective_error.h"

namespace halogen::train {

namespace {

class CommunicatorVote final : public Vote {
 public:
  explicit CommunicatorVote(comm::Communicator& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void max(double* values, int count) override { comm_.allreduce_max(values, count); }
  void broadcast(std::string&, int) override {
    HALOGEN_ASSERT(false,
                   "Report::lowest_on_every_rank needs a broadcast, which a Communicator does not have");
  }

 private:
  comm::Communicator& comm_;
};

}  // namespace

void run_collectively(comm::Communicator& comm, const std::function<void()>& step, Report report) {
  HALOGEN_ASSERT(report != Report::lowest_on_every_rank, "a Communicator cannot broadcast the message");
  CommunicatorVote vote(comm);
  halogen::run_collectively(vote, step, report);
}

}  // namespace halogen::train
