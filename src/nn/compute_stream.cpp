#include "nn/compute_stream.h"

#include <utility>

#include "kernels/device.h"

namespace halogen::nn {

ComputeStream::ComputeStream(Device device) {
  if (device == Device::cpu) return;
  stream_ = kernels::device::create_stream();
}

ComputeStream::~ComputeStream() { kernels::device::destroy_stream(stream_); }

ComputeStream::ComputeStream(ComputeStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

ComputeStream& ComputeStream::operator=(ComputeStream&& other) noexcept {
  if (this != &other) {
    ComputeStream dying(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void ComputeStream::synchronize() const {
  if (stream_ != nullptr) kernels::device::synchronize_stream(stream_);
}

}  // namespace halogen::nn
