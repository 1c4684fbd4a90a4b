#pragma once
// SelfComm: a one-rank Communicator without MPI (unit tests, serial tools). Exchanges must be empty (a
// one-rank shard has no halo) and every collective is the identity.
#include "comm/communicator.h"

namespace halogen::comm {

class SelfComm final : public Communicator {
 public:
  explicit SelfComm(Device device = Device::cpu) : device_(device) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Device device() const override { return device_; }
  std::unique_ptr<Request> start_exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                                          kernels::Stream compute_stream) override;
  void wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) override;
  void allreduce_sum(float*, int64_t, kernels::Stream) override {}
  std::unique_ptr<Request> start_allreduce_sum(float*, int64_t, kernels::Stream) override;
  void allreduce_sum(double*, int64_t) override {}
  void allreduce_sum(int64_t*, int64_t) override {}
  void allreduce_max(double*, int64_t) override {}
  void barrier() override {}
  [[noreturn]] void abort(int exit_code) override;

 private:
  Device device_;
};

}  // namespace halogen::comm
