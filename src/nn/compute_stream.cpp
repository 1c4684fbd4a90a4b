#include "nn/compute_stream.h"

#include <utility>

#include "core/error.h"

#ifdef HALOGEN_HAVE_CUDA
#include "kernels/cuda/device.h"
#endif

namespace halogen::nn {

ComputeStream::ComputeStream(Device device) {
  if (device == Device::cpu) return;
#ifdef HALOGEN_HAVE_CUDA
  stream_ = cuda::create_stream();
#else
  throw UserError("device cuda: this build has no CUDA backend (configure with -DHALOGEN_CUDA=ON)");
#endif
}

ComputeStream::~ComputeStream() {
#ifdef HALOGEN_HAVE_CUDA
  if (stream_ != nullptr) cuda::destroy_stream(stream_);
#endif
}

ComputeStream::ComputeStream(ComputeStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

ComputeStream& ComputeStream::operator=(ComputeStream&& other) noexcept {
  if (this != &other) {
    ComputeStream dying(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void ComputeStream::synchronize() const {
#ifdef HALOGEN_HAVE_CUDA
  if (stream_ != nullptr) cuda::synchronize_stream(stream_);
#endif
}

}  // namespace halogen::nn
