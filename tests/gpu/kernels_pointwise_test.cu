// GPU parity of the row-wise and pointwise ops: bias, fused bias/ReLU/dropout, dropout, masks, bias gradient,
// softmax cross-entropy, accuracy, Adam, fill/axpy/sum_squares, against halogen::kernels::cpu.
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/rng.h"
#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "kernels/device.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

std::vector<int64_t> global_ids(int64_t rows) {  // not the row index: masks must follow the global id
  std::vector<int64_t> gid(rows);
  for (int64_t r = 0; r < rows; ++r) gid[r] = 1000003 + 7 * r;
  return gid;
}

}  // namespace

TEST(GpuEpilogue, AddBiasAndApplyMaskMatchCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t width : {1, 33, 256}) {
    HostMatrix h = dyadic_matrix(123, width, width + 1, 1), mask = dyadic_matrix(123, width, width, 2);
    std::vector<float> bias = dyadic_values(width, 3);
    DeviceMatrix h_device(h), mask_device(mask);
    Buffer<float> bias_device = to_device(bias);
    kernels::cpu::add_bias(h.view(), Span<const float>{bias.data(), width, Device::cpu});
    kernels::cuda::add_bias(h_device.view(), Span<const float>{bias_device.data(), width, Device::cuda});
    EXPECT_EQ(h_device.host(), h.data) << "add_bias width " << width;
    kernels::cpu::apply_mask(h.view(), mask.view());
    kernels::cuda::apply_mask(h_device.view(), mask_device.view());
    EXPECT_EQ(h_device.host(), h.data) << "apply_mask width " << width;
  }
}

TEST(GpuEpilogue, BiasReluDropoutMatchesCpuBitForBit) {
  HALOGEN_REQUIRE_GPU();
  // Same RNG and the same float operations per element: values and masks are identical, not just close.
  for (int64_t width : {1, 5, 64, 100})
    for (float p : {0.0f, 0.5f, 0.9f})
      for (bool relu : {false, true})
        for (bool with_bias : {false, true}) {
          SCOPED_TRACE(::testing::Message() << "width " << width << " p " << p << " relu " << relu << " bias "
                                            << with_bias);
          const int64_t rows = 77;
          HostMatrix h{rows, width, width, uniform_values(rows * width, 10 + width, -1.0f, 1.0f)};
          HostMatrix mask = dyadic_matrix(rows, width, width, 11);
          std::vector<float> bias = with_bias ? uniform_values(width, 12, -0.5f, 0.5f) : std::vector<float>{};
          std::vector<int64_t> gid = global_ids(rows);
          DeviceMatrix h_device(h), mask_device(mask);
          Buffer<float> bias_device = to_device(bias);
          Buffer<int64_t> gid_device = to_device(gid);
          kernels::EpilogueParams params;
          params.relu = relu;
          params.dropout = p;
          params.seed = 42;
          params.rng_stream = rng::stream_id(rng::kDropout, 3, 1);
          kernels::cpu::bias_relu_dropout(h.view(), Span<const float>{bias.data(), (int64_t)bias.size(), Device::cpu},
                                          Span<const int64_t>{gid.data(), rows, Device::cpu}, params, mask.view());
          kernels::cuda::bias_relu_dropout(
              h_device.view(), Span<const float>{bias_device.data(), bias_device.size(), Device::cuda},
              Span<const int64_t>{gid_device.data(), rows, Device::cuda}, params, mask_device.view());
          EXPECT_EQ(h_device.host(), h.data);
          EXPECT_EQ(mask_device.host(), mask.data);
        }
}

TEST(GpuEpilogue, DropoutMatchesCpuInPlaceAndWithoutMask) {
  HALOGEN_REQUIRE_GPU();
  const int64_t rows = 64, width = 37;
  HostMatrix x{rows, width, width, uniform_values(rows * width, 20, -2.0f, 2.0f)};
  HostMatrix mask = dyadic_matrix(rows, width, width, 21);
  std::vector<int64_t> gid = global_ids(rows);
  DeviceMatrix x_device(x), mask_device(mask);
  Buffer<int64_t> gid_device = to_device(gid);
  kernels::EpilogueParams params;
  params.dropout = 0.3f;
  params.seed = 7;
  params.rng_stream = rng::stream_id(rng::kDropout, 0, 0);
  const Span<const int64_t> gid_host{gid.data(), rows, Device::cpu}, gid_dev{gid_device.data(), rows, Device::cuda};
  // In place with a mask.
  kernels::cpu::dropout(x.view(), gid_host, params, x.view(), mask.view());
  kernels::cuda::dropout(x_device.view(), gid_dev, params, x_device.view(), mask_device.view());
  EXPECT_EQ(x_device.host(), x.data);
  EXPECT_EQ(mask_device.host(), mask.data);
  // Again (a second draw of the same stream gives the same factors) without recording a mask.
  kernels::cpu::dropout(x.view(), gid_host, params, x.view(), Matrix<float>{});
  kernels::cuda::dropout(x_device.view(), gid_dev, params, x_device.view(), Matrix<float>{});
  EXPECT_EQ(x_device.host(), x.data);
}

// The sparse-input dropout (Model::input_dropout, GAT's per-head masks on the nonzeros): an (nnz, 1) column whose
// "row ids" are keys gid * F + c of any size. The CPU draws these eight Philox calls at a time (AVX2) with scalar
// tails; the GPU one element at a time: the factors must agree bit for bit, for every key, tails included.
TEST(GpuEpilogue, DropoutOfAKeyedColumnMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t rows : {1, 7, 8, 9, 10007}) {
    HostMatrix x{rows, 1, 1, uniform_values(rows, 40, -2.0f, 2.0f)};
    HostMatrix out{rows, 1, 1, std::vector<float>(rows, 0.0f)};
    std::vector<int64_t> keys(rows);
    for (int64_t i = 0; i < rows; ++i)
      keys[i] = static_cast<int64_t>(rng::uniform_u64(41, 1, i) % (int64_t(1) << 40)) * 100 + i % 100;
    DeviceMatrix x_device(x), out_device(out);
    Buffer<int64_t> keys_device = to_device(keys);
    for (const float p : {0.5f, 0.6f}) {
      kernels::EpilogueParams params;
      params.dropout = p;
      params.seed = 12;
      params.rng_stream = rng::stream_id(rng::kGatFeatureDropout, 3, 0, 2);
      kernels::cpu::dropout(x.view(), Span<const int64_t>{keys.data(), rows, Device::cpu}, params, out.view(),
                            Matrix<float>{});
      kernels::cuda::dropout(x_device.view(), Span<const int64_t>{keys_device.data(), rows, Device::cuda}, params,
                             out_device.view(), Matrix<float>{});
      EXPECT_EQ(out_device.host(), out.data) << rows << " rows, p " << p;
    }
  }
}

TEST(GpuEpilogue, BiasBackwardMatchesCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  // Dyadic inputs: column sums are exact in any order (parity_util.h): one row chunk (1, 9 rows) and the
  // two-pass chunks (5000 rows: 20 chunks summed in order).
  for (int64_t rows : {1, 9, 5000})
    for (int64_t width : {1, 31, 33, 256}) {
      HostMatrix grad = dyadic_matrix(rows, width, width + 5, rows + width);
      std::vector<float> bias_grad = dyadic_values(width, 77);  // "+=": starts non-zero
      DeviceMatrix grad_device(grad);
      Buffer<float> bias_grad_device = to_device(bias_grad);
      kernels::cpu::bias_backward(grad.view(), Span<float>{bias_grad.data(), width, Device::cpu});
      kernels::cuda::bias_backward(grad_device.view(), Span<float>{bias_grad_device.data(), width, Device::cuda});
      EXPECT_EQ(to_host(bias_grad_device), bias_grad) << "rows " << rows << " width " << width;
    }
}

TEST(GpuEpilogue, ReluDropoutBackwardMatchesCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  // The output of a real epilogue (kept, dropped and dead units); dyadic gradients and p in {0, 0.5} (factor 1
  // or 2) keep the products and the column sums exact in any order.
  for (int64_t width : {1, 33, 128})
    for (float p : {0.0f, 0.5f}) {
      SCOPED_TRACE(::testing::Message() << "width " << width << " p " << p);
      const int64_t rows = 3000;
      HostMatrix out{rows, width, width, uniform_values(rows * width, 30 + width, -1.0f, 1.0f)};
      std::vector<int64_t> gid = global_ids(rows);
      kernels::EpilogueParams params;
      params.dropout = p;
      params.seed = 5;
      params.rng_stream = rng::stream_id(rng::kDropout, 2, 1);
      kernels::cpu::bias_relu_dropout(out.view(), Span<const float>{}, Span<const int64_t>{gid.data(), rows, Device::cpu},
                                      params, Matrix<float>{});
      HostMatrix grad = dyadic_matrix(rows, width, width + 3, 31);
      std::vector<float> bias_grad = dyadic_values(width, 32);
      DeviceMatrix out_device(out), grad_device(grad);
      Buffer<float> bias_grad_device = to_device(bias_grad);
      kernels::cpu::relu_dropout_backward(grad.view(), out.view(), p, Span<float>{bias_grad.data(), width, Device::cpu});
      kernels::cuda::relu_dropout_backward(grad_device.view(), out_device.view(), p,
                                           Span<float>{bias_grad_device.data(), width, Device::cuda});
      EXPECT_EQ(grad_device.host(), grad.data);
      EXPECT_EQ(to_host(bias_grad_device), bias_grad);
    }
}

TEST(GpuLoss, SoftmaxCrossEntropyMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t classes : {1, 7, 47, 100}) {
    SCOPED_TRACE(::testing::Message() << "classes " << classes);
    const int64_t n = 500;
    HostMatrix logits{n, classes, classes, uniform_values(n * classes, classes, -8.0f, 8.0f)};
    std::vector<int32_t> labels(n);
    for (int64_t r = 0; r < n; ++r) labels[r] = static_cast<int32_t>((r * 13) % classes);
    std::vector<int64_t> rows;  // every third row, out of order
    for (int64_t r = n - 1; r >= 0; r -= 3) rows.push_back(r);
    HostMatrix grad{n, classes, classes, std::vector<float>(n * classes, 7.0f)};  // "=": overwritten everywhere
    DeviceMatrix logits_device(logits), grad_device(grad);
    Buffer<int32_t> labels_device = to_device(labels);
    Buffer<int64_t> rows_device = to_device(rows);
    const float scale = 1.0f / 1234.0f;
    const int64_t m = static_cast<int64_t>(rows.size());
    const double cpu_loss = kernels::cpu::softmax_cross_entropy(
        logits.view(), Span<const int32_t>{labels.data(), n, Device::cpu}, Span<const int64_t>{rows.data(), m, Device::cpu},
        scale, grad.view());
    const double gpu_loss = kernels::cuda::softmax_cross_entropy(
        logits_device.view(), Span<const int32_t>{labels_device.data(), n, Device::cuda},
        Span<const int64_t>{rows_device.data(), m, Device::cuda}, scale, grad_device.view());
    // Both sum per-row double values (each within a few ulps: exp/log in double) in different orders.
    EXPECT_NEAR(gpu_loss, cpu_loss, 1e-10 * (1.0 + std::fabs(cpu_loss)));
    // Each gradient is a double rounded to float once; a few double ulps may flip that rounding: 1 float ulp.
    const std::vector<float> got = grad_device.host();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], grad.data[i], FLT_EPSILON * std::fabs(grad.data[i]) + 1e-12f) << "element " << i;
  }
}

TEST(GpuLoss, SoftmaxCrossEntropyWithNoRowsZeroesTheGradient) {
  HALOGEN_REQUIRE_GPU();
  HostMatrix grad{4, 3, 3, std::vector<float>(12, 5.0f)};
  DeviceMatrix logits_device(grad), grad_device(grad);
  Buffer<int32_t> labels_device = to_device(std::vector<int32_t>{0, 1, 2, 0});
  const double loss = kernels::cuda::softmax_cross_entropy(
      logits_device.view(), Span<const int32_t>{labels_device.data(), 4, Device::cuda}, Span<const int64_t>{}, 1.0f,
      grad_device.view());
  EXPECT_EQ(loss, 0.0);
  EXPECT_EQ(grad_device.host(), std::vector<float>(12, 0.0f));
}

TEST(GpuLoss, CountCorrectMatchesCpuIncludingTies) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t classes : {1, 3, 40, 70}) {
    const int64_t n = 300;
    // Dyadic logits with few distinct values: many ties, which must go to the lowest index as on the CPU.
    HostMatrix logits{n, classes, classes, dyadic_values(n * classes, classes, 2, 1.0f)};
    std::vector<int32_t> labels(n);
    for (int64_t r = 0; r < n; ++r) labels[r] = static_cast<int32_t>((r * 7) % classes);
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < n; r += 2) rows.push_back(r);
    DeviceMatrix logits_device(logits);
    Buffer<int32_t> labels_device = to_device(labels);
    Buffer<int64_t> rows_device = to_device(rows);
    const int64_t m = static_cast<int64_t>(rows.size());
    const int64_t expected = kernels::cpu::count_correct(logits.view(), Span<const int32_t>{labels.data(), n, Device::cpu},
                                                         Span<const int64_t>{rows.data(), m, Device::cpu});
    const int64_t got = kernels::cuda::count_correct(logits_device.view(),
                                                     Span<const int32_t>{labels_device.data(), n, Device::cuda},
                                                     Span<const int64_t>{rows_device.data(), m, Device::cuda});
    EXPECT_EQ(got, expected) << "classes " << classes;
    EXPECT_GT(expected, 0) << "the test should contain correct rows";
  }
}

TEST(GpuAdam, MatchesCpuOverSeveralSteps) {
  HALOGEN_REQUIRE_GPU();
  const int64_t n = 1000;
  std::vector<float> param = uniform_values(n, 1, -1.0f, 1.0f), m(n, 0.0f), v(n, 0.0f);
  Buffer<float> param_device = to_device(param), m_device = to_device(m), v_device = to_device(v);
  kernels::AdamParams params;
  params.lr = 0.01f;
  params.weight_decay = 5e-4f;
  for (int64_t step = 1; step <= 5; ++step) {
    params.step = step;
    std::vector<float> grad = uniform_values(n, 100 + step, -0.1f, 0.1f);
    Buffer<float> grad_device = to_device(grad);
    kernels::cpu::adam_step(Span<float>{param.data(), n, Device::cpu}, Span<const float>{grad.data(), n, Device::cpu},
                            Span<float>{m.data(), n, Device::cpu}, Span<float>{v.data(), n, Device::cpu}, params);
    kernels::cuda::adam_step(param_device.span(), Span<const float>{grad_device.data(), n, Device::cuda},
                             m_device.span(), v_device.span(), params);
  }
  // The kernel spells out the CPU's float operations with round-to-nearest intrinsics (no FMA contraction),
  // and the host computes the same step constants: identical unless the CPU build contracted to FMA, which
  // the tolerance covers: 2 ulps per step (5 steps) of each quantity's scale (the update of a parameter is
  // about lr, m about |grad| <= 0.1, v about grad^2 <= 0.01), so values that pass near 0 are not held to a
  // relative tolerance they cannot meet.
  const std::vector<float> got_param = to_host(param_device), got_m = to_host(m_device), got_v = to_host(v_device);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(got_param[i], param[i], 10 * FLT_EPSILON * (std::fabs(param[i]) + params.lr)) << i;
    ASSERT_NEAR(got_m[i], m[i], 10 * FLT_EPSILON * (std::fabs(m[i]) + 0.1f)) << i;
    ASSERT_NEAR(got_v[i], v[i], 10 * FLT_EPSILON * (std::fabs(v[i]) + 0.01f)) << i;
  }
}

TEST(GpuElementwise, FillAxpyAndSumSquares) {
  HALOGEN_REQUIRE_GPU();
  const int64_t n = 100003;  // not a multiple of any block size
  std::vector<float> x = dyadic_values(n, 5), y = dyadic_values(n, 6);
  Buffer<float> x_device = to_device(x), y_device = to_device(y);
  kernels::cpu::axpy(0.25f, Span<const float>{x.data(), n, Device::cpu}, Span<float>{y.data(), n, Device::cpu});
  kernels::cuda::axpy(0.25f, Span<const float>{x_device.data(), n, Device::cuda}, y_device.span());
  EXPECT_EQ(to_host(y_device), y);  // one rounding per element, dyadic: exact
  // Squares of dyadic values summed in double: exact in any order.
  EXPECT_EQ(kernels::cuda::sum_squares(Span<const float>{y_device.data(), n, Device::cuda}),
            kernels::cpu::sum_squares(Span<const float>{y.data(), n, Device::cpu}));
  EXPECT_EQ(kernels::cuda::sum_squares(Span<const float>{}), 0.0);
  kernels::cuda::fill(y_device.span(), -3.5f);
  EXPECT_EQ(to_host(y_device), std::vector<float>(n, -3.5f));
  // A NaN or an Inf anywhere makes the sum NaN.
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> z = dyadic_values(n, 8);
    z[n / 2] = bad;
    Buffer<float> z_device = to_device(z);
    EXPECT_TRUE(std::isnan(kernels::cuda::sum_squares(Span<const float>{z_device.data(), n, Device::cuda})));
  }
}

TEST(GpuDevice, PhaseTimerCopyBandwidthAndNvtxWork) {
  HALOGEN_REQUIRE_GPU();
  EXPECT_FALSE(cuda::device_description().empty());
  void* stream = cuda::create_stream();
  Buffer<float> x(1 << 20, Device::cuda);
  kernels::device::PhaseTimer timer(1);  // capacity 1: the second interval makes the pool grow
  for (int i = 0; i < 3; ++i) {
    kernels::device::NvtxRange range("phase timer test");
    timer.begin(stream);
    kernels::cuda::fill(x.span(), static_cast<float>(i), stream);
    timer.end(stream);
  }
  EXPECT_EQ(timer.intervals(), 3);
  const double ms = timer.take_ms();
  EXPECT_TRUE(std::isfinite(ms) && ms > 0.0) << ms;  // three kernels took some time; no bound on how much
  EXPECT_EQ(timer.intervals(), 0);                  // take_ms starts over
  EXPECT_EQ(timer.take_ms(), 0.0);
  const double bandwidth = kernels::device::measure_copy_bandwidth_gbs(1 << 20, 3);
  EXPECT_TRUE(std::isfinite(bandwidth) && bandwidth > 0.0) << bandwidth;
  cuda::destroy_stream(stream);
}
