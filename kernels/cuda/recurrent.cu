// Elementwise ops of the temporal cells on the GPU: activations and their gradients, the fused GRU gates,
// multiply and scale_add on (possibly strided) matrices. One thread per element (grid-stride loop); the float
// arithmetic of every element is written as in kernels/cpu/recurrent.cpp (sigmoid/tanh use CUDA's expf/tanhf,
// a few ulp from glibc's vector versions).
#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

// A strided device matrix as the kernels see it.
template <typename T>
struct View {
  T* data;
  int64_t stride;
  __device__ T& operator()(int64_t r, int64_t c) const { return data[r * stride + c]; }
};

template <typename T>
View<T> view_of(const Matrix<T>& m) {
  return View<T>{m.data, detail::row_stride(m)};
}

// op(r, c) for every element of a (rows, cols) shape.
template <typename Op>
__global__ void elementwise_kernel(Op op, int64_t rows, int64_t cols) {
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) op(e.row, e.col);
}

template <typename Op>
void launch(const Op& op, int64_t rows, int64_t cols, Stream stream) {
  if (rows * cols == 0) return;
  elementwise_kernel<<<grid_for(rows * cols, kThreads), kThreads, 0, to_cuda(stream)>>>(op, rows, cols);
  HALOGEN_CUDA_CHECK_LAUNCH();
}

template <typename A, typename B>
void require_like(const Matrix<A>& view, const Matrix<B>& reference, const char* what, const char* reference_name) {
  detail::require_device(view, what);
  detail::require_same_shape(view, reference, what, reference_name);
}

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

struct SigmoidOp {
  View<const float> x;
  View<float> y;
  __device__ void operator()(int64_t r, int64_t c) const { y(r, c) = sigmoid(x(r, c)); }
};
struct TanhOp {
  View<const float> x;
  View<float> y;
  __device__ void operator()(int64_t r, int64_t c) const { y(r, c) = tanhf(x(r, c)); }
};
struct SigmoidBackwardOp {
  View<const float> y, grad_y;
  View<float> grad_x;
  __device__ void operator()(int64_t r, int64_t c) const {
    const float out = y(r, c);
    grad_x(r, c) = grad_y(r, c) * out * (1.0f - out);
  }
};
struct TanhBackwardOp {
  View<const float> y, grad_y;
  View<float> grad_x;
  __device__ void operator()(int64_t r, int64_t c) const {
    const float out = y(r, c);
    grad_x(r, c) = grad_y(r, c) * (1.0f - out * out);
  }
};
struct ReluOp {
  View<const float> x;
  View<float> y;
  __device__ void operator()(int64_t r, int64_t c) const {
    const float in = x(r, c);
    y(r, c) = in > 0.0f ? in : 0.0f;
  }
};
struct ReluBackwardOp {
  View<const float> y;
  View<float> grad;
  __device__ void operator()(int64_t r, int64_t c) const {
    if (!(y(r, c) > 0.0f)) grad(r, c) = 0.0f;
  }
};
struct MultiplyOp {
  View<const float> a, b;
  View<float> out;
  __device__ void operator()(int64_t r, int64_t c) const { out(r, c) = a(r, c) * b(r, c); }
};
struct ScaleAddOp {
  float alpha, beta;
  View<const float> x;
  View<float> y;
  __device__ void operator()(int64_t r, int64_t c) const {
    y(r, c) = beta == 0.0f ? alpha * x(r, c) : alpha * x(r, c) + beta * y(r, c);
  }
};
struct GruGatesOp {
  View<const float> pre_z, pre_r, h_prev;
  View<float> z, r, hr;
  __device__ void operator()(int64_t i, int64_t c) const {
    const float prev = h_prev(i, c);
    const float zz = sigmoid(pre_z(i, c)), rr = sigmoid(pre_r(i, c));
    z(i, c) = zz;
    r(i, c) = rr;
    hr(i, c) = prev * rr;
  }
};
struct GruUpdateOp {
  View<const float> pre_h, z, h_prev;
  bool keeps;
  View<float> h_candidate, h;
  __device__ void operator()(int64_t i, int64_t c) const {
    const float cand = tanhf(pre_h(i, c)), gate = z(i, c), prev = h_prev(i, c);
    h_candidate(i, c) = cand;
    h(i, c) = keeps ? gate * prev + (1.0f - gate) * cand : (1.0f - gate) * prev + gate * cand;
  }
};
struct GruUpdateBackwardOp {
  View<const float> grad_h, grad_carry, z, h_prev, h_candidate;
  bool carry, keeps;
  View<float> grad_pre_z, grad_pre_h, grad_h_prev;
  __device__ void operator()(int64_t i, int64_t c) const {
    const float d = carry ? grad_h(i, c) + grad_carry(i, c) : grad_h(i, c);
    const float zz = z(i, c), hh = h_candidate(i, c), pp = h_prev(i, c);
    if (keeps) {
      grad_pre_z(i, c) = d * (pp - hh) * zz * (1.0f - zz);
      grad_pre_h(i, c) = d * (1.0f - zz) * (1.0f - hh * hh);
      grad_h_prev(i, c) = d * zz;
    } else {
      grad_pre_z(i, c) = d * (hh - pp) * zz * (1.0f - zz);
      grad_pre_h(i, c) = d * zz * (1.0f - hh * hh);
      grad_h_prev(i, c) = d * (1.0f - zz);
    }
  }
};
struct GruGatesBackwardOp {
  View<const float> grad_hr, r, h_prev;
  View<float> grad_pre_r, grad_h_prev;
  __device__ void operator()(int64_t i, int64_t c) const {
    const float g = grad_hr(i, c), rr = r(i, c);
    grad_pre_r(i, c) = g * h_prev(i, c) * rr * (1.0f - rr);
    grad_h_prev(i, c) += g * rr;
  }
};

struct LstmCellOp {
  View<const float> pre, c_prev;
  int64_t width;
  View<float> gates, c, h;
  __device__ void operator()(int64_t r, int64_t k) const {
    const float i = sigmoid(pre(r, k)), f = sigmoid(pre(r, width + k)), g = tanhf(pre(r, 2 * width + k)),
                o = sigmoid(pre(r, 3 * width + k));
    gates(r, k) = i;
    gates(r, width + k) = f;
    gates(r, 2 * width + k) = g;
    gates(r, 3 * width + k) = o;
    const float cell = f * c_prev(r, k) + i * g;
    c(r, k) = cell;
    h(r, k) = tanhf(cell) * o;
  }
};
struct LstmCellBackwardOp {
  View<const float> grad_h, grad_c, gates, c_prev, c;
  bool carry;
  int64_t width;
  View<float> grad_pre, grad_c_prev;
  __device__ void operator()(int64_t r, int64_t k) const {
    const float i = gates(r, k), f = gates(r, width + k), g = gates(r, 2 * width + k), o = gates(r, 3 * width + k);
    const float t = tanhf(c(r, k)), gh = grad_h(r, k);
    const float dc = (carry ? grad_c(r, k) : 0.0f) + gh * o * (1.0f - t * t);
    grad_pre(r, k) = dc * g * i * (1.0f - i);
    grad_pre(r, width + k) = dc * c_prev(r, k) * f * (1.0f - f);
    grad_pre(r, 2 * width + k) = dc * i * (1.0f - g * g);
    grad_pre(r, 3 * width + k) = gh * t * o * (1.0f - o);
    grad_c_prev(r, k) = dc * f;
  }
};

void require_lstm_shapes(Matrix<const float> gates, Matrix<const float> state, const char* gates_name,
                         const char* state_name) {
  HALOGEN_ASSERT(gates.rows == state.rows && gates.cols == 4 * state.cols, "%s is (%lld, %lld) but %s is (%lld, %lld)",
                 gates_name, (long long)gates.rows, (long long)gates.cols, state_name, (long long)state.rows,
                 (long long)state.cols);
}

}  // namespace

void sigmoid_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  detail::require_device(x, "sigmoid x");
  require_like(y, x, "sigmoid y", "x");
  launch(SigmoidOp{view_of(x), view_of(y)}, x.rows, x.cols, stream);
}

void tanh_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  detail::require_device(x, "tanh x");
  require_like(y, x, "tanh y", "x");
  launch(TanhOp{view_of(x), view_of(y)}, x.rows, x.cols, stream);
}

void sigmoid_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream stream) {
  detail::require_device(y, "sigmoid_backward y");
  require_like(grad_y, y, "sigmoid_backward grad_y", "y");
  require_like(grad_x, y, "sigmoid_backward grad_x", "y");
  launch(SigmoidBackwardOp{view_of(y), view_of(grad_y), view_of(grad_x)}, y.rows, y.cols, stream);
}

void tanh_backward(Matrix<const float> y, Matrix<const float> grad_y, Matrix<float> grad_x, Stream stream) {
  detail::require_device(y, "tanh_backward y");
  require_like(grad_y, y, "tanh_backward grad_y", "y");
  require_like(grad_x, y, "tanh_backward grad_x", "y");
  launch(TanhBackwardOp{view_of(y), view_of(grad_y), view_of(grad_x)}, y.rows, y.cols, stream);
}

void relu_forward(Matrix<const float> x, Matrix<float> y, Stream stream) {
  detail::require_device(x, "relu x");
  require_like(y, x, "relu y", "x");
  launch(ReluOp{view_of(x), view_of(y)}, x.rows, x.cols, stream);
}

void relu_backward(Matrix<const float> y, Matrix<float> grad, Stream stream) {
  detail::require_device(y, "relu_backward y");
  require_like(grad, y, "relu_backward grad", "y");
  launch(ReluBackwardOp{view_of(y), view_of(grad)}, y.rows, y.cols, stream);
}

void multiply(Matrix<const float> a, Matrix<const float> b, Matrix<float> out, Stream stream) {
  detail::require_device(a, "multiply a");
  require_like(b, a, "multiply b", "a");
  require_like(out, a, "multiply out", "a");
  launch(MultiplyOp{view_of(a), view_of(b), view_of(out)}, a.rows, a.cols, stream);
}

void scale_add(float alpha, Matrix<const float> x, float beta, Matrix<float> y, Stream stream) {
  detail::require_device(x, "scale_add x");
  require_like(y, x, "scale_add y", "x");
  launch(ScaleAddOp{alpha, beta, view_of(x), view_of(y)}, x.rows, x.cols, stream);
}

void gru_gates(Matrix<const float> pre_z, Matrix<const float> pre_r, Matrix<const float> h_prev, Matrix<float> z,
               Matrix<float> r, Matrix<float> hr, Stream stream) {
  detail::require_device(pre_z, "gru_gates pre_z");
  require_like(pre_r, pre_z, "gru_gates pre_r", "pre_z");
  require_like(h_prev, pre_z, "gru_gates h_prev", "pre_z");
  require_like(z, pre_z, "gru_gates z", "pre_z");
  require_like(r, pre_z, "gru_gates r", "pre_z");
  require_like(hr, pre_z, "gru_gates hr", "pre_z");
  launch(GruGatesOp{view_of(pre_z), view_of(pre_r), view_of(h_prev), view_of(z), view_of(r), view_of(hr)},
         pre_z.rows, pre_z.cols, stream);
}

void gru_update(Matrix<const float> pre_h, Matrix<const float> z, Matrix<const float> h_prev, GruMix mix,
                Matrix<float> h_candidate, Matrix<float> h, Stream stream) {
  detail::require_device(pre_h, "gru_update pre_h");
  require_like(z, pre_h, "gru_update z", "pre_h");
  require_like(h_prev, pre_h, "gru_update h_prev", "pre_h");
  require_like(h_candidate, pre_h, "gru_update h_candidate", "pre_h");
  require_like(h, pre_h, "gru_update h", "pre_h");
  launch(GruUpdateOp{view_of(pre_h), view_of(z), view_of(h_prev), mix == GruMix::z_keeps_state, view_of(h_candidate),
                     view_of(h)},
         pre_h.rows, pre_h.cols, stream);
}

void gru_update_backward(Matrix<const float> grad_h, Matrix<const float> grad_carry, Matrix<const float> z,
                         Matrix<const float> h_prev, Matrix<const float> h_candidate, GruMix mix,
                         Matrix<float> grad_pre_z, Matrix<float> grad_pre_h, Matrix<float> grad_h_prev,
                         Stream stream) {
  detail::require_device(grad_h, "gru_update_backward grad_h");
  const bool carry = grad_carry.rows > 0;
  if (carry) require_like(grad_carry, grad_h, "gru_update_backward grad_carry", "grad_h");
  require_like(z, grad_h, "gru_update_backward z", "grad_h");
  require_like(h_prev, grad_h, "gru_update_backward h_prev", "grad_h");
  require_like(h_candidate, grad_h, "gru_update_backward h_candidate", "grad_h");
  require_like(grad_pre_z, grad_h, "gru_update_backward grad_pre_z", "grad_h");
  require_like(grad_pre_h, grad_h, "gru_update_backward grad_pre_h", "grad_h");
  require_like(grad_h_prev, grad_h, "gru_update_backward grad_h_prev", "grad_h");
  const View<const float> no_carry{nullptr, 0};
  launch(GruUpdateBackwardOp{view_of(grad_h), carry ? view_of(grad_carry) : no_carry, view_of(z), view_of(h_prev),
                             view_of(h_candidate), carry, mix == GruMix::z_keeps_state, view_of(grad_pre_z),
                             view_of(grad_pre_h), view_of(grad_h_prev)},
         grad_h.rows, grad_h.cols, stream);
}

void gru_gates_backward(Matrix<const float> grad_hr, Matrix<const float> r, Matrix<const float> h_prev,
                        Matrix<float> grad_pre_r, Matrix<float> grad_h_prev, Stream stream) {
  detail::require_device(grad_hr, "gru_gates_backward grad_hr");
  require_like(r, grad_hr, "gru_gates_backward r", "grad_hr");
  require_like(h_prev, grad_hr, "gru_gates_backward h_prev", "grad_hr");
  require_like(grad_pre_r, grad_hr, "gru_gates_backward grad_pre_r", "grad_hr");
  require_like(grad_h_prev, grad_hr, "gru_gates_backward grad_h_prev", "grad_hr");
  launch(GruGatesBackwardOp{view_of(grad_hr), view_of(r), view_of(h_prev), view_of(grad_pre_r), view_of(grad_h_prev)},
         grad_hr.rows, grad_hr.cols, stream);
}

void lstm_cell(Matrix<const float> pre, Matrix<const float> c_prev, Matrix<float> gates, Matrix<float> c,
               Matrix<float> h, Stream stream) {
  detail::require_device(c_prev, "lstm_cell c_prev");
  detail::require_device(pre, "lstm_cell pre");
  require_like(gates, pre, "lstm_cell gates", "pre");
  require_like(c, c_prev, "lstm_cell c", "c_prev");
  require_like(h, c_prev, "lstm_cell h", "c_prev");
  require_lstm_shapes(pre, c_prev, "pre", "c_prev");
  launch(LstmCellOp{view_of(pre), view_of(c_prev), c_prev.cols, view_of(gates), view_of(c), view_of(h)}, c_prev.rows,
         c_prev.cols, stream);
}

void lstm_cell_backward(Matrix<const float> grad_h, Matrix<const float> grad_c, Matrix<const float> gates,
                        Matrix<const float> c_prev, Matrix<const float> c, Matrix<float> grad_pre,
                        Matrix<float> grad_c_prev, Stream stream) {
  detail::require_device(grad_h, "lstm_cell_backward grad_h");
  const bool carry = grad_c.rows > 0;
  if (carry) require_like(grad_c, grad_h, "lstm_cell_backward grad_c", "grad_h");
  require_like(c_prev, grad_h, "lstm_cell_backward c_prev", "grad_h");
  require_like(c, grad_h, "lstm_cell_backward c", "grad_h");
  require_like(grad_c_prev, grad_h, "lstm_cell_backward grad_c_prev", "grad_h");
  detail::require_device(gates, "lstm_cell_backward gates");
  require_like(grad_pre, gates, "lstm_cell_backward grad_pre", "gates");
  require_lstm_shapes(gates, grad_h, "gates", "grad_h");
  const View<const float> no_carry{nullptr, 0};
  launch(LstmCellBackwardOp{view_of(grad_h), carry ? view_of(grad_c) : no_carry, view_of(gates), view_of(c_prev),
                            view_of(c), carry, grad_h.cols, view_of(grad_pre), view_of(grad_c_prev)},
         grad_h.rows, grad_h.cols, stream);
}

}  // namespace halogen::kernels::cuda
