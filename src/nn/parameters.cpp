#include "nn/parameters.h"

#include <cmath>

#include "core/error.h"
#include "core/rng.h"
#include "kernels/ops.h"

namespace halogen::nn {

int ParameterStore::add(const std::string& name, int layer, int64_t rows, int64_t cols, bool is_bias) {
  HALOGEN_ASSERT(params_.empty(), "add() after allocate()");
  infos_.push_back(ParameterInfo{name, layer, rows, cols, total_, is_bias});
  total_ += rows * cols;
  return count() - 1;
}

void ParameterStore::allocate(Device device) {
  params_ = Tensor(total_, device);
  grads_ = Tensor(total_, device);
  params_.zero();
  grads_.zero();
}

void ParameterStore::initialize(uint64_t seed) {
  std::vector<float> host(total_, 0.0f);
  for (int k = 0; k < count(); ++k) {
    const ParameterInfo& p = infos_[k];
    if (p.is_bias) continue;
    const double bound = std::sqrt(6.0 / static_cast<double>(p.rows + p.cols));
    const uint64_t stream = rng::stream_id(rng::kWeightInit, static_cast<uint32_t>(k));
    for (int64_t e = 0; e < p.size(); ++e) {
      const double u = rng::uniform(seed, stream, static_cast<uint64_t>(e));
      host[p.offset + e] = static_cast<float>((2.0 * u - 1.0) * bound);
    }
  }
  params_.copy_from_host(host.data(), total_);
  grads_.zero();
}

void ParameterStore::zero_grads(kernels::Stream stream) { kernels::fill(grads_.span(), 0.0f, stream); }

int ParameterStore::first_nonfinite_layer(kernels::Stream stream) const {
  if (std::isfinite(kernels::sum_squares(params_.span(), stream))) return -1;
  for (int k = 0; k < count(); ++k) {
    const ParameterInfo& info = infos_[k];
    const Span<const float> p{params_.data() + info.offset, info.size(), params_.device()};
    if (!std::isfinite(kernels::sum_squares(p, stream))) return info.layer;
  }
  return -1;
}

Matrix<float> ParameterStore::param(int index) {
  const ParameterInfo& p = infos_[index];
  return Matrix<float>{params_.data() + p.offset, p.rows, p.cols, p.cols, params_.device()};
}

Matrix<float> ParameterStore::grad(int index) {
  const ParameterInfo& p = infos_[index];
  return Matrix<float>{grads_.data() + p.offset, p.rows, p.cols, p.cols, grads_.device()};
}

}  // namespace halogen::nn
