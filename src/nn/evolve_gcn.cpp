#include "nn/evolve_gcn.h"

#include <cmath>
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

void require_shape(Matrix<const float> m, int64_t rows, int64_t cols, const char* what) {
  HALOGEN_ASSERT(m.rows == rows && m.cols == cols && m.device == Device::cpu, "%s is (%lld, %lld), expected (%lld, %lld)",
                 what, (long long)m.rows, (long long)m.cols, (long long)rows, (long long)cols);
}

// out = a x + b y: the two left products of one gate, through kernels::gemm.
void left_products(Matrix<const float> a, Matrix<const float> x, Matrix<const float> b, Matrix<const float> y,
                   Matrix<float> out) {
  kernels::gemm(a, false, x, false, out, 1.0f, 0.0f);
  kernels::gemm(b, false, y, false, out, 1.0f, 1.0f);
}

// dst += src, element by element (views may be strided).
void add_into(Matrix<float> dst, Matrix<const float> src) {
  for (int64_t i = 0; i < dst.rows; ++i)
    for (int64_t j = 0; j < dst.cols; ++j) dst(i, j) += src(i, j);
}

}  // namespace

// ---- MatrixGruStep ----------------------------------------------------------------------------------------

MatrixGruStep::MatrixGruStep(int64_t d_in, int64_t d_out)
    : d_in_(d_in),
      d_out_(d_out),
      rq_(matrix_buffer(d_in, d_out)),
      d_rq_(matrix_buffer(d_in, d_out)),
      da_z_(matrix_buffer(d_in, d_out)),
      da_r_(matrix_buffer(d_in, d_out)),
      da_h_(matrix_buffer(d_in, d_out)) {
  HALOGEN_ASSERT(d_in > 0 && d_out > 0, "d_in %lld d_out %lld", (long long)d_in, (long long)d_out);
}

int64_t MatrixGruStep::workspace_bytes() const {
  return 5 * d_in_ * d_out_ * static_cast<int64_t>(sizeof(float));
}

void MatrixGruStep::forward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates,
                            Matrix<float> next) {
  const int64_t m = d_in_, n = d_out_;
  require_shape(q, m, n, "q");
  require_shape(next, m, n, "next");
  HALOGEN_ASSERT(next.data != q.data, "next must not alias q");
  const Matrix<float> z = gates.z, r = gates.r, h = gates.h_candidate;
  Matrix<float> rq = rq_.matrix();
  // X = Q in the -O variant.
  left_products(gru.w_z, q, gru.u_z, q, z);
  left_products(gru.w_r, q, gru.u_r, q, r);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      z(i, j) = sigmoid(z(i, j) + gru.b_z(i, j));
      r(i, j) = sigmoid(r(i, j) + gru.b_r(i, j));
      rq(i, j) = r(i, j) * q(i, j);
    }
  }
  left_products(gru.w_h, q, gru.u_h, rq, h);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      h(i, j) = std::tanh(h(i, j) + gru.b_h(i, j));
      next(i, j) = (1.0f - z(i, j)) * q(i, j) + z(i, j) * h(i, j);
    }
  }
}

void MatrixGruStep::backward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates,
                             Matrix<const float> grad_next, const MatrixGruGrads& grad, Matrix<float> grad_q) {
  const int64_t m = d_in_, n = d_out_;
  require_shape(q, m, n, "q");
  require_shape(grad_next, m, n, "grad_next");
  require_shape(grad_q, m, n, "grad_q");
  HALOGEN_ASSERT(grad_q.data != grad_next.data, "grad_q must not alias grad_next");
  const Matrix<const float> z = gates.z, r = gates.r, h = gates.h_candidate;
  Matrix<float> rq = rq_.matrix(), d_rq = d_rq_.matrix(), da_z = da_z_.matrix(), da_r = da_r_.matrix(),
                da_h = da_h_.matrix();
  // Q' = (1 - Z) o Q + Z o H~.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float g = grad_next(i, j), zz = z(i, j), hh = h(i, j);
      grad_q(i, j) = g * (1.0f - zz);
      da_z(i, j) = g * (hh - q(i, j)) * zz * (1.0f - zz);
      da_h(i, j) = g * zz * (1.0f - hh * hh);
      rq(i, j) = r(i, j) * q(i, j);
    }
  }
  // H~ = tanh(W_H Q + U_H (R o Q) + B_H).
  kernels::gemm(da_h, false, q, true, grad.w_h, 1.0f, 1.0f);
  kernels::gemm(da_h, false, rq, true, grad.u_h, 1.0f, 1.0f);
  add_into(grad.b_h, da_h);
  kernels::gemm(gru.w_h, true, da_h, false, grad_q, 1.0f, 1.0f);
  kernels::gemm(gru.u_h, true, da_h, false, d_rq, 1.0f, 0.0f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float rr = r(i, j);
      grad_q(i, j) += d_rq(i, j) * rr;
      da_r(i, j) = d_rq(i, j) * q(i, j) * rr * (1.0f - rr);
    }
  }
  // Z and R: sigmoid(W X + U Q + B) with X = Q.
  const struct {
    Matrix<const float> da, w, u;
    Matrix<float> dw, du, db;
  } gate_terms[2] = {{da_z, gru.w_z, gru.u_z, grad.w_z, grad.u_z, grad.b_z},
                     {da_r, gru.w_r, gru.u_r, grad.w_r, grad.u_r, grad.b_r}};
  for (const auto& gate : gate_terms) {
    kernels::gemm(gate.da, false, q, true, gate.dw, 1.0f, 1.0f);
    kernels::gemm(gate.da, false, q, true, gate.du, 1.0f, 1.0f);
    add_into(gate.db, gate.da);
    kernels::gemm(gate.w, true, gate.da, false, grad_q, 1.0f, 1.0f);
    kernels::gemm(gate.u, true, gate.da, false, grad_q, 1.0f, 1.0f);
  }
}

// ---- MatrixGruTensors -------------------------------------------------------------------------------------

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

MatrixGruParams MatrixGruTensors::view() const {
  return {w_z.matrix(), u_z.matrix(), b_z.matrix(), w_r.matrix(), u_r.matrix(),
          b_r.matrix(), w_h.matrix(), u_h.matrix(), b_h.matrix()};
}

MatrixGruGrads MatrixGruTensors::mutable_view() {
  return {w_z.matrix(), u_z.matrix(), b_z.matrix(), w_r.matrix(), u_r.matrix(),
          b_r.matrix(), w_h.matrix(), u_h.matrix(), b_h.matrix()};
}

// ---- EvolveGcnWeights -------------------------------------------------------------------------------------

EvolveGcnWeights::EvolveGcnWeights(int64_t d_in, int64_t d_out)
    : d_in_(d_in), d_out_(d_out), gru_(d_in, d_out), gru_grad_(d_in, d_out), step_(d_in, d_out) {}

void EvolveGcnWeights::forward(Matrix<const float> w0, int64_t steps) {
  require_shape(w0, d_in_, d_out_, "w0");
  HALOGEN_ASSERT(steps >= 0);
  q_.clear();
  z_.clear();
  r_.clear();
  h_candidate_.clear();
  q_.push_back(matrix_buffer(d_in_, d_out_));
  for (int64_t i = 0; i < d_in_; ++i)
    for (int64_t j = 0; j < d_out_; ++j) q_[0][i * d_out_ + j] = w0(i, j);
  for (int64_t t = 0; t < steps; ++t) {
    z_.push_back(matrix_buffer(d_in_, d_out_));
    r_.push_back(matrix_buffer(d_in_, d_out_));
    h_candidate_.push_back(matrix_buffer(d_in_, d_out_));
    Buffer<float> next = matrix_buffer(d_in_, d_out_);
    step_.forward(gru_.view(), q_[t].matrix(), {z_[t].matrix(), r_[t].matrix(), h_candidate_[t].matrix()},
                  next.matrix());
    q_.push_back(std::move(next));
  }
}

void EvolveGcnWeights::backward(const std::vector<Matrix<const float>>& grad_w, Matrix<float> grad_w0) {
  const int64_t steps = this->steps();
  HALOGEN_ASSERT(static_cast<int64_t>(grad_w.size()) == steps, "%zu gradients for %lld steps", grad_w.size(),
                 static_cast<long long>(steps));
  require_shape(grad_w0, d_in_, d_out_, "grad_w0");
  // g: dLoss/dQ' of the step being undone (starts with dLoss/dW_T); g_prev receives dLoss/dQ.
  Buffer<float> g = matrix_buffer(d_in_, d_out_), g_prev = matrix_buffer(d_in_, d_out_);
  for (int64_t t = steps - 1; t >= 0; --t) {
    // g += dLoss/dW_{t+1} through step t+1's own graph products.
    require_shape(grad_w[t], d_in_, d_out_, "grad_w[t]");
    add_into(g.matrix(), grad_w[t]);
    step_.backward(gru_.view(), q_[t].matrix(), {z_[t].matrix(), r_[t].matrix(), h_candidate_[t].matrix()},
                   g.matrix(), gru_grad_.mutable_view(), g_prev.matrix());
    std::swap(g, g_prev);
  }
  for (int64_t i = 0; i < d_in_; ++i)
    for (int64_t j = 0; j < d_out_; ++j) grad_w0(i, j) = g[i * d_out_ + j];
}

}  // namespace halogen::nn
