#include "comm/nccl/host_staged_comm.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "comm/mpi_session.h"
#include "core/check.h"

namespace halogen::comm {

struct HostStagedComm::Staging {
  float* host = nullptr;  // pinned, (capacity)
  int64_t capacity = 0;
  cudaEvent_t copies_done = nullptr;  // recorded after the host -> device copies out of `host`
};

namespace {

cudaStream_t to_cuda(kernels::Stream stream) { return static_cast<cudaStream_t>(stream); }

struct StagedRequest final : Request {
  std::unique_ptr<Request> host_request;
  HostStagedComm::Staging* staging = nullptr;
  std::vector<Message> receives;  // device destinations
  std::vector<int64_t> receive_offsets;  // where each receive's floats sit in staging->host
};

}  // namespace

HostStagedComm::HostStagedComm(std::unique_ptr<Communicator> host) : host_(std::move(host)) {
  HALOGEN_ASSERT(host_ != nullptr && host_->device() == Device::cpu, "HostStagedComm needs a host communicator");
}

HostStagedComm::~HostStagedComm() {
  for (auto& staging : all_) {
    CUDA_CHECK(cudaEventSynchronize(staging->copies_done));
    CUDA_CHECK(cudaEventDestroy(staging->copies_done));
    CUDA_CHECK(cudaFreeHost(staging->host));
  }
}

HostStagedComm::Staging* HostStagedComm::take_staging(int64_t floats) {
  // The smallest free buffer that fits, else grow the largest free one, else a new one.
  Staging* chosen = nullptr;
  for (Staging* staging : free_)
    if (staging->capacity >= floats && (chosen == nullptr || staging->capacity < chosen->capacity)) chosen = staging;
  if (chosen == nullptr && !free_.empty()) chosen = *std::max_element(free_.begin(), free_.end(),
      [](const Staging* a, const Staging* b) { return a->capacity < b->capacity; });
  if (chosen == nullptr) {
    all_.push_back(std::make_unique<Staging>());
    chosen = all_.back().get();
    CUDA_CHECK(cudaEventCreateWithFlags(&chosen->copies_done, cudaEventDisableTiming));
  } else {
    free_.erase(std::find(free_.begin(), free_.end(), chosen));
  }
  // Copies out of this buffer queued by an earlier wait() must be done before it is written again.
  CUDA_CHECK(cudaEventSynchronize(chosen->copies_done));
  if (chosen->capacity < floats) {
    if (chosen->host != nullptr) CUDA_CHECK(cudaFreeHost(chosen->host));
    chosen->host = nullptr;
    void* pinned = nullptr;
    CUDA_CHECK(cudaMallocHost(&pinned, static_cast<size_t>(floats) * sizeof(float)));
    chosen->host = static_cast<float*>(pinned);
    chosen->capacity = floats;
  }
  return chosen;
}

void HostStagedComm::give_back(Staging* staging, kernels::Stream stream) {
  CUDA_CHECK(cudaEventRecord(staging->copies_done, to_cuda(stream)));
  free_.push_back(staging);
}

std::unique_ptr<Request> HostStagedComm::start_exchange(const std::vector<Message>& sends,
                                                        const std::vector<Message>& receives,
                                                        kernels::Stream compute_stream) {
  int64_t total = 0;
  for (const Message& m : sends) total += m.count;
  for (const Message& m : receives) total += m.count;
  auto request = std::make_unique<StagedRequest>();
  request->staging = take_staging(std::max<int64_t>(total, 1));
  float* host = request->staging->host;
  const cudaStream_t stream = to_cuda(compute_stream);
  std::vector<Message> host_sends, host_receives;
  int64_t offset = 0;
  for (const Message& m : sends) {
    HALOGEN_ASSERT(m.count >= 0);
    if (m.count > 0)
      CUDA_CHECK(cudaMemcpyAsync(host + offset, m.data, m.count * sizeof(float), cudaMemcpyDeviceToHost, stream));
    host_sends.push_back(Message{m.peer, host + offset, m.count});
    offset += m.count;
  }
  for (const Message& m : receives) {
    HALOGEN_ASSERT(m.count >= 0);
    host_receives.push_back(Message{m.peer, host + offset, m.count});
    request->receives.push_back(m);
    request->receive_offsets.push_back(offset);
    offset += m.count;
  }
  // MPI may read the send rows as soon as they are posted: they must be on the host by then.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  request->host_request = host_->start_exchange(host_sends, host_receives, nullptr);
  return request;
}

void HostStagedComm::wait(std::unique_ptr<Request> request, kernels::Stream compute_stream) {
  auto* staged = dynamic_cast<StagedRequest*>(request.get());
  HALOGEN_ASSERT(staged != nullptr, "request from another communicator");
  host_->wait(std::move(staged->host_request), nullptr);
  const cudaStream_t stream = to_cuda(compute_stream);
  for (size_t k = 0; k < staged->receives.size(); ++k) {
    const Message& m = staged->receives[k];
    if (m.count > 0)
      CUDA_CHECK(cudaMemcpyAsync(m.data, staged->staging->host + staged->receive_offsets[k],
                                 m.count * sizeof(float), cudaMemcpyHostToDevice, stream));
  }
  give_back(staged->staging, compute_stream);
}

std::unique_ptr<Request> HostStagedComm::start_allreduce_sum(float* data, int64_t count,
                                                             kernels::Stream compute_stream) {
  HALOGEN_ASSERT(count >= 0);
  auto request = std::make_unique<StagedRequest>();
  request->staging = take_staging(std::max<int64_t>(count, 1));
  const cudaStream_t stream = to_cuda(compute_stream);
  if (count > 0)
    CUDA_CHECK(cudaMemcpyAsync(request->staging->host, data, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  // MPI reads the staged copy from the moment the allreduce starts.
  CUDA_CHECK(cudaStreamSynchronize(stream));
  request->host_request = host_->start_allreduce_sum(request->staging->host, count, nullptr);
  // The sums come back like a received message: `count` floats from the start of the staging buffer.
  request->receives.push_back(Message{rank(), data, count});
  request->receive_offsets.push_back(0);
  return request;
}

void HostStagedComm::allreduce_sum(float* data, int64_t count, kernels::Stream compute_stream) {
  wait(start_allreduce_sum(data, count, compute_stream), compute_stream);
}

void HostStagedComm::progress(Request& request) {
  auto* staged = dynamic_cast<StagedRequest*>(&request);
  HALOGEN_ASSERT(staged != nullptr, "request from another communicator");
  host_->progress(*staged->host_request);
}

void HostStagedComm::abort(int exit_code) {
  host_->abort(exit_code);
  abort_all(exit_code);  // not reached: the host communicator's abort does not return
}

}  // namespace halogen::comm
