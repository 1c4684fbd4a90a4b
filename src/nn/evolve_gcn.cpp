#include "nn/evolve_gcn.h"

#include <utility>

#include "core/error.h"
#include "kernels/ops.h"

namespace halogen::nn {

namespace {

Buffer<float> matrix_buffer(int64_t rows, int64_t cols, Device device) {
  Buffer<float> b(rows, cols, device);
  b.zero();
  return b;
}

void require_shape(Matrix<const float> m, int64_t rows, int64_t cols, Device device, const char* what) {
  HALOGEN_ASSERT(m.rows == rows && m.cols == cols && m.device == device,
                 "%s is a (%lld, %lld) %s view, expected (%lld, %lld) on %s", what, (long long)m.rows,
                 (long long)m.cols, device_name(m.device), (long long)rows, (long long)cols, device_name(device));
}

// out = a x + b y: the two left products of one gate, through kernels::gemm.
void left_products(Matrix<const float> a, Matrix<const float> x, Matrix<const float> b, Matrix<const float> y,
                   Matrix<float> out, kernels::Stream stream) {
  kernels::gemm(a, false, x, false, out, 1.0f, 0.0f, stream);
  kernels::gemm(b, false, y, false, out, 1.0f, 1.0f, stream);
}

// dst += src (views may be strided).
void add_into(Matrix<float> dst, Matrix<const float> src, kernels::Stream stream) {
  kernels::scale_add(1.0f, src, 1.0f, dst, stream);
}

}  // namespace

// ---- MatrixGruStep ----------------------------------------------------------------------------------------

MatrixGruStep::MatrixGruStep(int64_t d_in, int64_t d_out, Device device, kernels::Stream stream)
    : d_in_(d_in),
      d_out_(d_out),
      device_(device),
      stream_(stream),
      rq_(matrix_buffer(d_in, d_out, device)),
      d_rq_(matrix_buffer(d_in, d_out, device)),
      da_z_(matrix_buffer(d_in, d_out, device)),
      da_r_(matrix_buffer(d_in, d_out, device)),
      da_h_(matrix_buffer(d_in, d_out, device)) {
  HALOGEN_ASSERT(d_in > 0 && d_out > 0, "d_in %lld d_out %lld", (long long)d_in, (long long)d_out);
}

int64_t MatrixGruStep::workspace_bytes() const {
  return 5 * d_in_ * d_out_ * static_cast<int64_t>(sizeof(float));
}

void MatrixGruStep::forward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates,
                            Matrix<float> next) {
  const int64_t m = d_in_, n = d_out_;
  require_shape(q, m, n, device_, "q");
  require_shape(next, m, n, device_, "next");
  HALOGEN_ASSERT(next.data != q.data, "next must not alias q");
  const Matrix<float> z = gates.z, r = gates.r, h = gates.h_candidate;
  Matrix<float> rq = rq_.matrix();
  // X = Q in the -O variant. Z, R = sigmoid(W X + U Q + B) in place; rq = R o Q.
  left_products(gru.w_z, q, gru.u_z, q, z, stream_);
  left_products(gru.w_r, q, gru.u_r, q, r, stream_);
  add_into(z, gru.b_z, stream_);
  add_into(r, gru.b_r, stream_);
  kernels::gru_gates(z, r, q, z, r, rq, stream_);
  // H~ = tanh(W_H X + U_H (R o Q) + B_H) in place; Q' = (1 - Z) o Q + Z o H~.
  left_products(gru.w_h, q, gru.u_h, rq, h, stream_);
  add_into(h, gru.b_h, stream_);
  kernels::gru_update(h, z, q, kernels::GruMix::z_takes_candidate, h, next, stream_);
}

void MatrixGruStep::backward(const MatrixGruParams& gru, Matrix<const float> q, const MatrixGruGates& gates,
                             Matrix<const float> grad_next, const MatrixGruGrads& grad, Matrix<float> grad_q) {
  const int64_t m = d_in_, n = d_out_;
  require_shape(q, m, n, device_, "q");
  require_shape(grad_next, m, n, device_, "grad_next");
  require_shape(grad_q, m, n, device_, "grad_q");
  HALOGEN_ASSERT(grad_q.data != grad_next.data, "grad_q must not alias grad_next");
  const Matrix<const float> z = gates.z, r = gates.r, h = gates.h_candidate;
  Matrix<float> rq = rq_.matrix(), d_rq = d_rq_.matrix(), da_z = da_z_.matrix(), da_r = da_r_.matrix(),
                da_h = da_h_.matrix();
  // Q' = (1 - Z) o Q + Z o H~: da_z, da_h and the direct grad_q.
  kernels::gru_update_backward(grad_next, Matrix<const float>{}, z, q, h, kernels::GruMix::z_takes_candidate, da_z,
                               da_h, grad_q, stream_);
  kernels::multiply(r, q, rq, stream_);
  // H~ = tanh(W_H Q + U_H (R o Q) + B_H).
  kernels::gemm(da_h, false, q, true, grad.w_h, 1.0f, 1.0f, stream_);
  kernels::gemm(da_h, false, rq, true, grad.u_h, 1.0f, 1.0f, stream_);
  add_into(grad.b_h, da_h, stream_);
  kernels::gemm(gru.w_h, true, da_h, false, grad_q, 1.0f, 1.0f, stream_);
  kernels::gemm(gru.u_h, true, da_h, false, d_rq, 1.0f, 0.0f, stream_);
  // R o Q: da_r, and grad_q += d_rq o R.
  kernels::gru_gates_backward(d_rq, r, q, da_r, grad_q, stream_);
  // Z and R: sigmoid(W X + U Q + B) with X = Q.
  const struct {
    Matrix<const float> da, w, u;
    Matrix<float> dw, du, db;
  } gate_terms[2] = {{da_z, gru.w_z, gru.u_z, grad.w_z, grad.u_z, grad.b_z},
                     {da_r, gru.w_r, gru.u_r, grad.w_r, grad.u_r, grad.b_r}};
  for (const auto& gate : gate_terms) {
    kernels::gemm(gate.da, false, q, true, gate.dw, 1.0f, 1.0f, stream_);
    kernels::gemm(gate.da, false, q, true, gate.du, 1.0f, 1.0f, stream_);
    add_into(gate.db, gate.da, stream_);
    kernels::gemm(gate.w, true, gate.da, false, grad_q, 1.0f, 1.0f, stream_);
    kernels::gemm(gate.u, true, gate.da, false, grad_q, 1.0f, 1.0f, stream_);
  }
}

// ---- MatrixGruTensors -------------------------------------------------------------------------------------

MatrixGruTensors::MatrixGruTensors(int64_t d_in, int64_t d_out, Device device)
    : w_z(matrix_buffer(d_in, d_in, device)),
      u_z(matrix_buffer(d_in, d_in, device)),
      w_r(matrix_buffer(d_in, d_in, device)),
      u_r(matrix_buffer(d_in, d_in, device)),
      w_h(matrix_buffer(d_in, d_in, device)),
      u_h(matrix_buffer(d_in, d_in, device)),
      b_z(matrix_buffer(d_in, d_out, device)),
      b_r(matrix_buffer(d_in, d_out, device)),
      b_h(matrix_buffer(d_in, d_out, device)) {}

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

EvolveGcnWeights::EvolveGcnWeights(int64_t d_in, int64_t d_out, Device device, kernels::Stream stream)
    : d_in_(d_in),
      d_out_(d_out),
      device_(device),
      stream_(stream),
      gru_(d_in, d_out, device),
      gru_grad_(d_in, d_out, device),
      step_(d_in, d_out, device, stream) {}

void EvolveGcnWeights::forward(Matrix<const float> w0, int64_t steps) {
  require_shape(w0, d_in_, d_out_, device_, "w0");
  HALOGEN_ASSERT(steps >= 0);
  q_.clear();
  z_.clear();
  r_.clear();
  h_candidate_.clear();
  q_.push_back(matrix_buffer(d_in_, d_out_, device_));
  kernels::scale_add(1.0f, w0, 0.0f, q_[0].matrix(), stream_);
  for (int64_t t = 0; t < steps; ++t) {
    z_.push_back(matrix_buffer(d_in_, d_out_, device_));
    r_.push_back(matrix_buffer(d_in_, d_out_, device_));
    h_candidate_.push_back(matrix_buffer(d_in_, d_out_, device_));
    Buffer<float> next = matrix_buffer(d_in_, d_out_, device_);
    step_.forward(gru_.view(), q_[t].matrix(), {z_[t].matrix(), r_[t].matrix(), h_candidate_[t].matrix()},
                  next.matrix());
    q_.push_back(std::move(next));
  }
}

void EvolveGcnWeights::backward(const std::vector<Matrix<const float>>& grad_w, Matrix<float> grad_w0) {
  const int64_t steps = this->steps();
  HALOGEN_ASSERT(static_cast<int64_t>(grad_w.size()) == steps, "%zu gradients for %lld steps", grad_w.size(),
                 static_cast<long long>(steps));
  require_shape(grad_w0, d_in_, d_out_, device_, "grad_w0");
  // g: dLoss/dQ' of the step being undone (starts with dLoss/dW_T); g_prev receives dLoss/dQ.
  Buffer<float> g = matrix_buffer(d_in_, d_out_, device_), g_prev = matrix_buffer(d_in_, d_out_, device_);
  for (int64_t t = steps - 1; t >= 0; --t) {
    // g += dLoss/dW_{t+1} through step t+1's own graph products.
    require_shape(grad_w[t], d_in_, d_out_, device_, "grad_w[t]");
    add_into(g.matrix(), grad_w[t], stream_);
    step_.backward(gru_.view(), q_[t].matrix(), {z_[t].matrix(), r_[t].matrix(), h_candidate_[t].matrix()},
                   g.matrix(), gru_grad_.mutable_view(), g_prev.matrix());
    std::swap(g, g_prev);
  }
  kernels::scale_add(1.0f, g.matrix(), 0.0f, grad_w0, stream_);
}

}  // namespace halogen::nn
