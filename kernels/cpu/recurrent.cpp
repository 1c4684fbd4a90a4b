// Elementwise ops of the temporal cells: activations and their gradients, the fused GRU gates, multiply and
// scale_add on (possibly strided) matrices. One OpenMP thread per block of rows; each element is computed
// independently, so results do not depend on the thread count.
#include <omp.h>

#include <algorithm>

#include "kernels/cpu/checks.h"
#include "kernels/cpu/gate_math.h"
#include "kernels/cpu/ops.h"

namespace halogen::kernels::cpu {
namespace {

template <typename A, typename B>
void require_like(const Matrix<A>& view, const Matrix<B>& reference, const char* what, const char* reference_name) {
  detail::require_host(view, what);
  detail::require_same_shape(view, reference, what, reference_name);
}

// body(r) for every row r, rows split statically over the threads.
template <typename Body>
void for_each_row(int64_t rows, int64_t cols, const Body& body) {
  detail::parallel_for(rows, rows * cols, body);
}

}  // namespace

void sigmoid_forward(Matrix<const float> x, Matrix<float> y, Stream) {
  detail::require_host(x, "sigmoid x");
  require_like(y, x, "sigmoid y", "x");
  for_each_row(x.rows, x.cols, [&](int64_t r) { detail::sigmoid_run(x.row(r), y.row(r), x.cols); });
}

void tanh_forward(Matrix<const float> x, Matrix<float> y, Stream) {
  detail::require_host(x, "tanh x");
  require_like(y, x, "tanh y", "x");
  for_each_row(x.rows, x.cols, [&](int64_t r) { detail::tanh_run(x.row(r), y.row(r), x.cols); });
}

void sigmoid_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream) {
  detail::require_host(y, "sigmoid_backward y");
  require_like(grad_y, y, "sigmoid_backward grad_y", "y");
  require_like(grad_x, y, "sigmoid_backward grad_x", "y");
  const int64_t cols = y.cols;
  for_each_row(y.rows, y.cols, [&](int64_t r) {
    const float* out = y.row(r);
    const float* g = grad_y.row(r);
    float* dx = grad_x.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dx[c] = g[c] * out[c] * (1.0f - out[c]);
  });
}

void tanh_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream) {
  detail::require_host(y, "tanh_backward y");
  require_like(grad_y, y, "tanh_backward grad_y", "y");
  require_like(grad_x, y, "tanh_backward grad_x", "y");
  const int64_t cols = y.cols;
  for_each_row(y.rows, y.cols, [&](int64_t r) {
    const float* out = y.row(r);
    const float* g = grad_y.row(r);
    float* dx = grad_x.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) dx[c] = g[c] * (1.0f - out[c] * out[c]);
  });
}

void relu_forward(Matrix<const float> x, Matrix<float> y, Stream) {
  detail::require_host(x, "relu x");
  require_like(y, x, "relu y", "x");
  const int64_t cols = x.cols;
  for_each_row(x.rows, x.cols, [&](int64_t r) {
    const float* in = x.row(r);
    float* out = y.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) out[c] = in[c] > 0.0f ? in[c] : 0.0f;  // branch-free: vectorises
  });
}

void relu_backward(Matrix<const float> y, Matrix<float> grad, Stream) {
  detail::require_host(y, "relu_backward y");
  require_like(grad, y, "relu_backward grad", "y");
  const int64_t cols = y.cols;
  for_each_row(y.rows, y.cols, [&](int64_t r) {
    const float* __restrict__ out = y.row(r);
    float* __restrict__ g = grad.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) g[c] = out[c] > 0.0f ? g[c] : 0.0f;
  });
}

void multiply(Matrix<const float> a, Matrix<const float> b, Matrix<float> out, Stream) {
  detail::require_host(a, "multiply a");
  require_like(b, a, "multiply b", "a");
  require_like(out, a, "multiply out", "a");
  const int64_t cols = a.cols;
  for_each_row(a.rows, a.cols, [&](int64_t r) {
    const float* x = a.row(r);
    const float* y = b.row(r);
    float* o = out.row(r);
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) o[c] = x[c] * y[c];
  });
}

void scale_add(float alpha, Matrix<const float> x, float beta, Matrix<float> y, Stream) {
  detail::require_host(x, "scale_add x");
  require_like(y, x, "scale_add y", "x");
  const int64_t cols = x.cols;
  for_each_row(x.rows, x.cols, [&](int64_t r) {
    const float* in = x.row(r);  // y may alias x
    float* out = y.row(r);
    if (beta == 0.0f) {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) out[c] = alpha * in[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) out[c] = alpha * in[c] + beta * out[c];
    }
  });
}

void gru_gates(Matrix<const float> pre_z, Matrix<const float> pre_r, Matrix<const float> h_prev, Matrix<float> z,
               Matrix<float> r, Matrix<float> hr, Stream) {
  detail::require_host(pre_z, "gru_gates pre_z");
  require_like(pre_r, pre_z, "gru_gates pre_r", "pre_z");
  require_like(h_prev, pre_z, "gru_gates h_prev", "pre_z");
  require_like(z, pre_z, "gru_gates z", "pre_z");
  require_like(r, pre_z, "gru_gates r", "pre_z");
  require_like(hr, pre_z, "gru_gates hr", "pre_z");
  const int64_t cols = pre_z.cols;
  for_each_row(pre_z.rows, pre_z.cols, [&](int64_t i) {
    detail::sigmoid_run(pre_z.row(i), z.row(i), cols);
    detail::sigmoid_run(pre_r.row(i), r.row(i), cols);
    const float* prev = h_prev.row(i);
    const float* reset = r.row(i);
    float* out = hr.row(i);
    for (int64_t c = 0; c < cols; ++c) out[c] = prev[c] * reset[c];
  });
}

void gru_update(Matrix<const float> pre_h, Matrix<const float> z, Matrix<const float> h_prev, GruMix mix,
                Matrix<float> h_candidate, Matrix<float> h, Stream) {
  detail::require_host(pre_h, "gru_update pre_h");
  require_like(z, pre_h, "gru_update z", "pre_h");
  require_like(h_prev, pre_h, "gru_update h_prev", "pre_h");
  require_like(h_candidate, pre_h, "gru_update h_candidate", "pre_h");
  require_like(h, pre_h, "gru_update h", "pre_h");
  const int64_t cols = pre_h.cols;
  const bool keeps = mix == GruMix::z_keeps_state;
  for_each_row(pre_h.rows, pre_h.cols, [&](int64_t i) {
    detail::tanh_run(pre_h.row(i), h_candidate.row(i), cols);
    const float* gate = z.row(i);
    const float* prev = h_prev.row(i);
    const float* cand = h_candidate.row(i);
    float* out = h.row(i);
    if (keeps) {
      for (int64_t c = 0; c < cols; ++c) out[c] = gate[c] * prev[c] + (1.0f - gate[c]) * cand[c];
    } else {
      for (int64_t c = 0; c < cols; ++c) out[c] = (1.0f - gate[c]) * prev[c] + gate[c] * cand[c];
    }
  });
}

void gru_update_backward(Matrix<const float> grad_h, Matrix<const float> grad_carry, Matrix<const float> z,
                         Matrix<const float> h_prev, Matrix<const float> h_candidate, GruMix mix,
                         Matrix<float> grad_pre_z, Matrix<float> grad_pre_h, Matrix<float> grad_h_prev, Stream) {
  detail::require_host(grad_h, "gru_update_backward grad_h");
  const bool carry = grad_carry.rows > 0;
  if (carry) require_like(grad_carry, grad_h, "gru_update_backward grad_carry", "grad_h");
  require_like(z, grad_h, "gru_update_backward z", "grad_h");
  require_like(h_prev, grad_h, "gru_update_backward h_prev", "grad_h");
  require_like(h_candidate, grad_h, "gru_update_backward h_candidate", "grad_h");
  require_like(grad_pre_z, grad_h, "gru_update_backward grad_pre_z", "grad_h");
  require_like(grad_pre_h, grad_h, "gru_update_backward grad_pre_h", "grad_h");
  require_like(grad_h_prev, grad_h, "gru_update_backward grad_h_prev", "grad_h");
  const int64_t cols = grad_h.cols;
  const bool keeps = mix == GruMix::z_keeps_state;
  for_each_row(grad_h.rows, grad_h.cols, [&](int64_t i) {
    const float* g = grad_h.row(i);
    const float* extra = carry ? grad_carry.row(i) : nullptr;
    const float* gate = z.row(i);
    const float* prev = h_prev.row(i);
    const float* cand = h_candidate.row(i);
    float* dz = grad_pre_z.row(i);
    float* dh = grad_pre_h.row(i);
    float* dprev = grad_h_prev.row(i);
    for (int64_t c = 0; c < cols; ++c) {
      const float d = carry ? g[c] + extra[c] : g[c];
      const float zz = gate[c], hh = cand[c], pp = prev[c];
      if (keeps) {
        dz[c] = d * (pp - hh) * zz * (1.0f - zz);
        dh[c] = d * (1.0f - zz) * (1.0f - hh * hh);
        dprev[c] = d * zz;
      } else {
        dz[c] = d * (hh - pp) * zz * (1.0f - zz);
        dh[c] = d * zz * (1.0f - hh * hh);
        dprev[c] = d * (1.0f - zz);
      }
    }
  });
}

void gru_gates_backward(Matrix<const float> grad_hr, Matrix<const float> r, Matrix<const float> h_prev,
                        Matrix<float> grad_pre_r, Matrix<float> grad_h_prev, Stream) {
  detail::require_host(grad_hr, "gru_gates_backward grad_hr");
  require_like(r, grad_hr, "gru_gates_backward r", "grad_hr");
  require_like(h_prev, grad_hr, "gru_gates_backward h_prev", "grad_hr");
  require_like(grad_pre_r, grad_hr, "gru_gates_backward grad_pre_r", "grad_hr");
  require_like(grad_h_prev, grad_hr, "gru_gates_backward grad_h_prev", "grad_hr");
  const int64_t cols = grad_hr.cols;
  for_each_row(grad_hr.rows, grad_hr.cols, [&](int64_t i) {
    const float* g = grad_hr.row(i);
    const float* reset = r.row(i);
    const float* prev = h_prev.row(i);
    float* dr = grad_pre_r.row(i);
    float* dprev = grad_h_prev.row(i);
    for (int64_t c = 0; c < cols; ++c) {
      const float gg = g[c], rr = reset[c];
      dr[c] = gg * prev[c] * rr * (1.0f - rr);
      dprev[c] += gg * rr;
    }
  });
}

namespace {

void require_lstm_shapes(Matrix<const float> gates, Matrix<const float> state, const char* gates_name,
                         const char* state_name) {
  HALOGEN_ASSERT(gates.rows == state.rows && gates.cols == 4 * state.cols, "%s is (%lld, %lld) but %s is (%lld, %lld)",
                 gates_name, (long long)gates.rows, (long long)gates.cols, state_name, (long long)state.rows,
                 (long long)state.cols);
}

}  // namespace

void lstm_cell(Matrix<const float> pre, Matrix<const float> c_prev, Matrix<float> gates, Matrix<float> c,
               Matrix<float> h, Stream) {
  detail::require_host(c_prev, "lstm_cell c_prev");
  detail::require_host(pre, "lstm_cell pre");
  require_like(gates, pre, "lstm_cell gates", "pre");
  require_like(c, c_prev, "lstm_cell c", "c_prev");
  require_like(h, c_prev, "lstm_cell h", "c_prev");
  require_lstm_shapes(pre, c_prev, "pre", "c_prev");
  const int64_t width = c_prev.cols;
  for_each_row(c_prev.rows, c_prev.cols, [&](int64_t r) {
    const float* in = pre.row(r);
    float* gate = gates.row(r);
    detail::sigmoid_run(in, gate, 2 * width);                          // i | f
    detail::tanh_run(in + 2 * width, gate + 2 * width, width);         // g
    detail::sigmoid_run(in + 3 * width, gate + 3 * width, width);      // o
    const float* prev = c_prev.row(r);
    float* cell = c.row(r);
    float* out = h.row(r);
    for (int64_t k = 0; k < width; ++k) cell[k] = gate[width + k] * prev[k] + gate[k] * gate[2 * width + k];
    detail::tanh_run(cell, out, width);
    for (int64_t k = 0; k < width; ++k) out[k] *= gate[3 * width + k];
  });
}

void lstm_cell_backward(Matrix<const float> grad_h, Matrix<const float> grad_c, Matrix<const float> gates,
                        Matrix<const float> c_prev, Matrix<const float> c, Matrix<float> grad_pre,
                        Matrix<float> grad_c_prev, Stream) {
  detail::require_host(grad_h, "lstm_cell_backward grad_h");
  const bool carry = grad_c.rows > 0;
  if (carry) require_like(grad_c, grad_h, "lstm_cell_backward grad_c", "grad_h");
  require_like(c_prev, grad_h, "lstm_cell_backward c_prev", "grad_h");
  require_like(c, grad_h, "lstm_cell_backward c", "grad_h");
  require_like(grad_c_prev, grad_h, "lstm_cell_backward grad_c_prev", "grad_h");
  detail::require_host(gates, "lstm_cell_backward gates");
  require_like(grad_pre, gates, "lstm_cell_backward grad_pre", "gates");
  require_lstm_shapes(gates, grad_h, "gates", "grad_h");
  const int64_t width = grad_h.cols;
  for_each_row(grad_h.rows, grad_h.cols, [&](int64_t r) {
    const float* gh = grad_h.row(r);
    const float* gc = carry ? grad_c.row(r) : nullptr;
    const float* gate = gates.row(r);
    const float* prev = c_prev.row(r);
    float* tanh_c = grad_pre.row(r) + 3 * width;  // tanh(c) parked in the o block until that block is written
    detail::tanh_run(c.row(r), tanh_c, width);
    float* d = grad_pre.row(r);
    float* dprev = grad_c_prev.row(r);
    for (int64_t k = 0; k < width; ++k) {
      const float i = gate[k], f = gate[width + k], g = gate[2 * width + k], o = gate[3 * width + k];
      const float t = tanh_c[k];
      const float dc = (carry ? gc[k] : 0.0f) + gh[k] * o * (1.0f - t * t);
      d[k] = dc * g * i * (1.0f - i);
      d[width + k] = dc * prev[k] * f * (1.0f - f);
      d[2 * width + k] = dc * i * (1.0f - g * g);
      d[3 * width + k] = gh[k] * t * o * (1.0f - o);
      dprev[k] = dc * f;
    }
  });
}

}  // namespace halogen::kernels::cpu
