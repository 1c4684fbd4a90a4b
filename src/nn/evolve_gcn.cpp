#include "nn/evolve_gcn.h"

#include <cmath>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

namespace {

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

Buffer<float> matrix_buffer(int64_t rows, int64_t cols) {
  Buffer<float> b(rows, cols, Device::cpu);
  b.zero();
  return b;
}

// out = a x + b y (+ out when accumulate): the two left products of one gate, through kernels::gemm.
void left_products(const Buffer<float>& a, Matrix<const float> x, const Buffer<float>& b,
                   Matrix<const float> y, Matrix<float> out) {
  kernels::gemm(a.matrix(), false, x, false, out, 1.0f, 0.0f);
  kernels::gemm(b.matrix(), false, y, false, out, 1.0f, 1.0f);
}

}  // namespace

MatrixGruTensors::MatrixGruTensors(int64_t d_in, int64_t d_out)
    : w_z(matrix_buffer(d_in, d_in)),
      u_z(matrix_buffer(d_in, d_in)),
      w_r(matrix_buffer(d_in, d_in)),
      u_r(matrix_buffer(d_in, d_in)),
      w_h(matrix_buffer(d_in, d_in)),
      u_h(matrix_buffer(d_in, d_in)),
      b_z(matrix_buffer(d_in, d_out)),
      b_r(matrix_buffer(d_in, d_out)),
      b_h(matrix_buffer(d_in, d_out)) {}

std::vector<Buffer<float>*> MatrixGruTensors::all() {
  return {&w_z, &u_z, &b_z, &w_r, &u_r, &b_r, &w_h, &u_h, &b_h};
}

void MatrixGruTensors::zero() {
  for (Buffer<float>* b : all()) b->zero();
}

EvolveGcnWeights::EvolveGcnWeights(int64_t d_in, int64_t d_out)
    : d_in_(d_in), d_out_(d_out), gru_(d_in, d_out), gru_grad_(d_in, d_out) {
  HALOGEN_ASSERT(d_in > 0 && d_out > 0, "d_in %lld d_out %lld", static_cast<long long>(d_in),
                 static_cast<long long>(d_out));
}

void EvolveGcnWeights::forward(Matrix<const float> w0, int64_t steps) {
  HALOGEN_ASSERT(w0.rows == d_in_ && w0.cols == d_out_ && w0.device == Device::cpu && steps >= 0);
  const int64_t size = d_in_ * d_out_;
  q_.clear();
  z_.clear();
  r_.clear();
  h_candidate_.clear();
  q_.push_back(matrix_buffer(d_in_, d_out_));
  for (int64_t i = 0; i < d_in_; ++i)
    for (int64_t j = 0; j < d_out_; ++j) q_[0][i * d_out_ + j] = w0(i, j);
  Buffer<float> rq = matrix_buffer(d_in_, d_out_);
  for (int64_t t = 0; t < steps; ++t) {
    const Matrix<const float> q = q_[t].matrix();  // X = Q = W_t in the -O variant
    Buffer<float> z = matrix_buffer(d_in_, d_out_), r = matrix_buffer(d_in_, d_out_),
                  h = matrix_buffer(d_in_, d_out_), next = matrix_buffer(d_in_, d_out_);
    left_products(gru_.w_z, q, gru_.u_z, q, z.matrix());
    left_products(gru_.w_r, q, gru_.u_r, q, r.matrix());
    for (int64_t i = 0; i < size; ++i) {
      z[i] = sigmoid(z[i] + gru_.b_z[i]);
      r[i] = sigmoid(r[i] + gru_.b_r[i]);
      rq[i] = r[i] * q_[t][i];
    }
    left_products(gru_.w_h, q, gru_.u_h, rq.matrix(), h.matrix());
    for (int64_t i = 0; i < size; ++i) {
      h[i] = std::tanh(h[i] + gru_.b_h[i]);
      next[i] = (1.0f - z[i]) * q_[t][i] + z[i] * h[i];
    }
    z_.push_back(std::move(z));
    r_.push_back(std::move(r));
    h_candidate_.push_back(std::move(h));
    q_.push_back(std::move(next));
  }
}

void EvolveGcnWeights::backward(const std::vector<Matrix<const float>>& grad_w, Matrix<float> grad_w0) {
  const int64_t steps = this->steps(), size = d_in_ * d_out_;
  HALOGEN_ASSERT(static_cast<int64_t>(grad_w.size()) == steps, "%zu gradients for %lld steps", grad_w.size(),
                 static_cast<long long>(steps));
  HALOGEN_ASSERT(grad_w0.rows == d_in_ && grad_w0.cols == d_out_ && grad_w0.device == Device::cpu);
  // g: dLoss/dQ' of the step being undone (starts with dLoss/dW_T); g_prev collects dLoss/dQ.
  Buffer<float> g = matrix_buffer(d_in_, d_out_), g_prev = matrix_buffer(d_in_, d_out_);
  Buffer<float> da_z = matrix_buffer(d_in_, d_out_), da_r = matrix_buffer(d_in_, d_out_),
                da_h = matrix_buffer(d_in_, d_out_), rq = matrix_buffer(d_in_, d_out_),
                d_rq = matrix_buffer(d_in_, d_out_);
  MatrixGruTensors& dg = gru_grad_;
  for (int64_t t = steps - 1; t >= 0; --t) {
    // g += dLoss/dW_{t+1} through step t+1's own graph products.
    const Matrix<const float> direct = grad_w[t];
    HALOGEN_ASSERT(direct.rows == d_in_ && direct.cols == d_out_);
    for (int64_t i = 0; i < d_in_; ++i)
      for (int64_t j = 0; j < d_out_; ++j) g[i * d_out_ + j] += direct(i, j);
    const Buffer<float>&q = q_[t], &z = z_[t], &r = r_[t], &h = h_candidate_[t];
    const Matrix<const float> qm = q.matrix();
    // Q' = (1 - Z) o Q + Z o H~.
    for (int64_t i = 0; i < size; ++i) {
      const float d_z = g[i] * (h[i] - q[i]);
      const float d_h = g[i] * z[i];
      g_prev[i] = g[i] * (1.0f - z[i]);
      da_z[i] = d_z * z[i] * (1.0f - z[i]);
      da_h[i] = d_h * (1.0f - h[i] * h[i]);
      rq[i] = r[i] * q[i];
    }
    // H~ = tanh(W_H Q + U_H (R o Q) + B_H).
    kernels::gemm(da_h.matrix(), false, qm, true, dg.w_h.matrix(), 1.0f, 1.0f);
    kernels::gemm(da_h.matrix(), false, rq.matrix(), true, dg.u_h.matrix(), 1.0f, 1.0f);
    kernels::axpy(1.0f, std::as_const(da_h).span(), dg.b_h.span());
    kernels::gemm(gru_.w_h.matrix(), true, da_h.matrix(), false, g_prev.matrix(), 1.0f, 1.0f);
    kernels::gemm(gru_.u_h.matrix(), true, da_h.matrix(), false, d_rq.matrix(), 1.0f, 0.0f);
    for (int64_t i = 0; i < size; ++i) {
      g_prev[i] += d_rq[i] * r[i];
      const float d_r = d_rq[i] * q[i];
      da_r[i] = d_r * r[i] * (1.0f - r[i]);
    }
    // Z and R: sigmoid(W X + U Q + B) with X = Q.
    for (auto [da, w, u, dw, du, db] :
         {std::make_tuple(&da_z, &gru_.w_z, &gru_.u_z, &dg.w_z, &dg.u_z, &dg.b_z),
          std::make_tuple(&da_r, &gru_.w_r, &gru_.u_r, &dg.w_r, &dg.u_r, &dg.b_r)}) {
      kernels::gemm(da->matrix(), false, qm, true, dw->matrix(), 1.0f, 1.0f);
      kernels::gemm(da->matrix(), false, qm, true, du->matrix(), 1.0f, 1.0f);
      kernels::axpy(1.0f, std::as_const(*da).span(), db->span());
      kernels::gemm(w->matrix(), true, da->matrix(), false, g_prev.matrix(), 1.0f, 1.0f);
      kernels::gemm(u->matrix(), true, da->matrix(), false, g_prev.matrix(), 1.0f, 1.0f);
    }
    std::swap(g, g_prev);
  }
  for (int64_t i = 0; i < d_in_; ++i)
    for (int64_t j = 0; j < d_out_; ++j) grad_w0(i, j) = g[i * d_out_ + j];
}

}  // namespace halogen::nn
