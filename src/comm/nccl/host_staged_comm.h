#pragma once
// HostStagedComm: a Communicator for device buffers built on a host one (MpiComm), by copying through pinned
// host memory. Compiled into the CUDA backend library; made by comm::make_device_comm("mpi"). It is the
// `--comm mpi` of the GPU trainer: it works where NCCL cannot, e.g. several ranks sharing one GPU (NCCL
// refuses two ranks on one device) or no NCCL at all.
//
// Costs: an exchange copies its send rows device -> host and must wait for that copy on the host before MPI
// can send them (one cudaStreamSynchronize of the compute stream per start_exchange); the received rows are
// copied host -> device on the compute stream in wait(). The local product queued *after* start_exchange
// still overlaps the MPI transfer. start_allreduce_sum copies D2H, synchronises the compute stream and starts
// the host communicator's non-blocking allreduce on the staged copy; wait() completes it and copies the sums
// H2D on the compute stream; progress() forwards to the host communicator. The blocking device allreduce is
// start + wait.
//
// Staging buffers are pinned (cudaMallocHost), pooled and reused: after the first exchanges of the largest
// size nothing is allocated. A buffer is reused only after the host -> device copies out of it finished
// (an event per buffer), so back-to-back exchanges never overwrite rows still being copied.
#include <memory>
#include <vector>

#include "comm/communicator.h"

namespace halogen::comm {

class HostStagedComm final : public Communicator {
 public:
  // `host` must move host buffers (device() == Device::cpu); this object owns it.
  explicit HostStagedComm(std::unique_ptr<Communicator> host);
  ~HostStagedComm() override;
  HostStagedComm(const HostStagedComm&) = delete;
  HostStagedComm& operator=(const HostStagedComm&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  Device device() const override { return Device::cuda; }

  std::unique_ptr<Request> start_exchange(const std::vector<Message>& sends, const std::vector<Message>& receives,
                                          kernels::Stream compute_stream) override;
  void wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) override;

  void allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  std::unique_ptr<Request> start_allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) override;
  void progress(Request& request) override;
  void allreduce_sum(double* data, int64_t count) override { host_->allreduce_sum(data, count); }
  void allreduce_sum(int64_t* data, int64_t count) override { host_->allreduce_sum(data, count); }
  void allreduce_max(double* data, int64_t count) override { host_->allreduce_max(data, count); }
  void barrier() override { host_->barrier(); }
  [[noreturn]] void abort(int exit_code) override;

  struct Staging;  // one pinned buffer and the event that says its last host -> device copies are done

 private:
  Staging* take_staging(int64_t floats);
  void give_back(Staging* staging, kernels::Stream stream);

  std::unique_ptr<Communicator> host_;
  std::vector<std::unique_ptr<Staging>> all_;  // every buffer made
  std::vector<Staging*> free_;                 // those not held by a request
};

}  // namespace halogen::comm
