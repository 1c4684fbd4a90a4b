#pragma once
// ComputeStream: the stream a Model enqueues all of its work on (kernels::<op> calls and Communicator calls).
// On Device::cuda a CUDA stream made once here (kernels::device::create_stream: it synchronises with the legacy default
// stream, so Buffer copies and zeroing stay ordered with the kernels); on Device::cpu it is nullptr (CPU
// kernels ignore streams). Move-only; destroys its stream. Device::cuda without the CUDA backend
// (kernels/device.h) is a UserError.
#include "core/buffer.h"
#include "kernels/ops.h"

namespace halogen::nn {

class ComputeStream {
 public:
  ComputeStream() = default;
  explicit ComputeStream(Device device);
  ~ComputeStream();
  ComputeStream(ComputeStream&& other) noexcept;
  ComputeStream& operator=(ComputeStream&& other) noexcept;
  ComputeStream(const ComputeStream&) = delete;
  ComputeStream& operator=(const ComputeStream&) = delete;

  kernels::Stream get() const { return stream_; }
  // Host waits for everything enqueued so far (no-op on the CPU).
  void synchronize() const;

 private:
  kernels::Stream stream_ = nullptr;
};

}  // namespace halogen::nn
