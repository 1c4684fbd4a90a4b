// GPU parity of the BF16 ops (kernels/ops.h "BF16 storage") against halogen::kernels::cpu: conversions and
// row packing bit for bit (the same integer rounding), spmm_bf16 bit for bit (both sum a row in index order
// with separate multiply and add, A in FP32), gemm_bf16 (cublasGemmEx, BF16 inputs, FP32 compute) bit for bit
// on dyadic inputs whose every partial sum is exact (so the order of additions cannot show).
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

std::vector<Bf16> bf16_of(const HostMatrix& m) {
  std::vector<Bf16> out(m.data.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = to_bf16(m.data[i]);
  return out;
}

Matrix<const Bf16> host_view(const std::vector<Bf16>& data, int64_t rows, int64_t cols, int64_t stride) {
  return Matrix<const Bf16>{data.data(), rows, cols, stride, Device::cpu};
}

std::vector<uint16_t> bits_of(const std::vector<Bf16>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].bits;
  return out;
}

}  // namespace

TEST(GpuBf16, ConversionsMatchCpuBitForBit) {
  HALOGEN_REQUIRE_GPU();
  HostMatrix x = dyadic_matrix(300, 37, 40, 1);
  // Values whose rounding is a tie, NaN with a low payload, Inf, a denormal.
  const uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x7f800001u, 0x7f800000u, 0x00010000u, 0x7f7fffffu};
  for (size_t i = 0; i < 6; ++i) std::memcpy(&x.data[i], &specials[i], sizeof(float));
  std::vector<Bf16> cpu_out(300 * 38, Bf16{0x1234});
  Buffer<Bf16> gpu_out = to_device(cpu_out);
  DeviceMatrix x_device(x);
  kernels::cpu::convert_to_bf16(Matrix<const float>{x.data.data(), 300, 37, 40, Device::cpu},
                                Matrix<Bf16>{cpu_out.data(), 300, 37, 38, Device::cpu});
  kernels::cuda::convert_to_bf16(x_device.view(), Matrix<Bf16>{gpu_out.data(), 300, 37, 38, Device::cuda});
  EXPECT_EQ(bits_of(to_host(gpu_out)), bits_of(cpu_out));
  HostMatrix back = dyadic_matrix(300, 37, 39, 2);
  DeviceMatrix back_device(back);
  kernels::cpu::convert_from_bf16(host_view(cpu_out, 300, 37, 38), back.view());
  kernels::cuda::convert_from_bf16(Matrix<const Bf16>{gpu_out.data(), 300, 37, 38, Device::cuda},
                                   back_device.view());
  const std::vector<float> gpu_back = back_device.host();
  EXPECT_EQ(0, std::memcmp(gpu_back.data(), back.data.data(), back.data.size() * sizeof(float)));
}

TEST(GpuBf16, SpmmMatchesCpuBitForBit) {
  HALOGEN_REQUIRE_GPU();
  uint64_t seed = 10;
  for (int64_t width : {1, 5, 32, 33, 128}) {
    const HostCsr a = random_csr(300, 200, 12, 7, ++seed);
    DeviceCsr a_device(a);
    const std::vector<Bf16> x = bf16_of(dyadic_matrix(200, width, width + 1, ++seed));
    Buffer<Bf16> x_device = to_device(x);
    for (bool accumulate : {false, true})
      for (bool pattern : {false, true}) {
        HostMatrix out = dyadic_matrix(300, width, width, ++seed);
        DeviceMatrix out_device(out);
        kernels::cpu::spmm_bf16(a.view(pattern), host_view(x, 200, width, width + 1), out.view(), accumulate);
        kernels::cuda::spmm_bf16(a_device.view(pattern),
                                 Matrix<const Bf16>{x_device.data(), 200, width, width + 1, Device::cuda},
                                 out_device.view(), accumulate);
        EXPECT_EQ(out_device.host(), out.data) << "width " << width << " accumulate " << accumulate;
      }
  }
}

TEST(GpuBf16, GatherAndScatterAddMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  const std::vector<Bf16> x = bf16_of(dyadic_matrix(50, 9, 10, 3));
  const std::vector<int32_t> idx = {4, 0, 49, 7, 12};  // distinct: the GPU's atomics add in no fixed order
  Buffer<Bf16> x_device = to_device(x);
  Buffer<int32_t> idx_device = to_device(idx);
  std::vector<Bf16> packed(5 * 10, Bf16{0x1111});
  Buffer<Bf16> packed_device = to_device(packed);
  kernels::cpu::gather_rows_bf16(host_view(x, 50, 9, 10), Span<const int32_t>{idx.data(), 5, Device::cpu},
                                 Matrix<Bf16>{packed.data(), 5, 9, 10, Device::cpu});
  kernels::cuda::gather_rows_bf16(Matrix<const Bf16>{x_device.data(), 50, 9, 10, Device::cuda},
                                  Span<const int32_t>{idx_device.data(), 5, Device::cuda},
                                  Matrix<Bf16>{packed_device.data(), 5, 9, 10, Device::cuda});
  EXPECT_EQ(bits_of(to_host(packed_device)), bits_of(packed));
  HostMatrix out = dyadic_matrix(50, 9, 9, 4);
  DeviceMatrix out_device(out);
  kernels::cpu::scatter_add_rows_bf16(host_view(packed, 5, 9, 10),
                                      Span<const int32_t>{idx.data(), 5, Device::cpu}, out.view());
  kernels::cuda::scatter_add_rows_bf16(Matrix<const Bf16>{packed_device.data(), 5, 9, 10, Device::cuda},
                                       Span<const int32_t>{idx_device.data(), 5, Device::cuda},
                                       out_device.view());
  EXPECT_EQ(out_device.host(), out.data);
}

TEST(GpuBf16, GemmMatchesCpuBitForBitOnDyadicInputs) {
  HALOGEN_REQUIRE_GPU();
  struct Case {
    int64_t m, n, k;
  };
  uint64_t seed = 40;
  for (const Case& c : {Case{37, 19, 33}, Case{700, 16, 129}, Case{40, 17, 20001}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k, b_rows = tb ? c.n : c.k,
                      b_cols = tb ? c.k : c.n;
        const std::vector<Bf16> a = bf16_of(dyadic_matrix(a_rows, a_cols, a_cols, ++seed));
        const std::vector<Bf16> b = bf16_of(dyadic_matrix(b_rows, b_cols, b_cols, ++seed));
        Buffer<Bf16> a_device = to_device(a), b_device = to_device(b);
        HostMatrix out = dyadic_matrix(c.m, c.n, c.n, ++seed);
        DeviceMatrix out_device(out);
        kernels::cpu::gemm_bf16(host_view(a, a_rows, a_cols, a_cols), ta,
                                host_view(b, b_rows, b_cols, b_cols), tb, out.view(), 1.0f, 0.5f);
        kernels::cuda::gemm_bf16(Matrix<const Bf16>{a_device.data(), a_rows, a_cols, a_cols, Device::cuda},
                                 ta,
                                 Matrix<const Bf16>{b_device.data(), b_rows, b_cols, b_cols, Device::cuda},
                                 tb, out_device.view(), 1.0f, 0.5f);
        // Dyadic inputs j/8, |j| <= 16 (exact in BF16): every product is a multiple of 2^-6 of magnitude <= 4
        // and every partial sum a multiple of 2^-6 below 4 * 20001 < 2^17, all exact in FP32, so every order
        // of additions gives the same bits.
        EXPECT_EQ(out_device.host(), out.data)
            << "m " << c.m << " n " << c.n << " k " << c.k << " ta " << ta << " tb " << tb;
      }
}

// The BF16 input path of a GCN first layer: dropout_bf16, scale_round_bf16 and their fusion
// dropout_scale_round_bf16, against the CPU bit for bit (the same Philox decisions, separate multiplies,
// the same integer rounding), with dropout on and off, with and without row scales.
TEST(GpuBf16, DropoutAndScaleRoundMatchCpuBitForBit) {
  HALOGEN_REQUIRE_GPU();
  const int64_t rows = 301, cols = 133, stride = 136;
  const std::vector<Bf16> x = bf16_of(dyadic_matrix(rows, cols, stride, 5));
  Buffer<Bf16> x_device = to_device(x);
  std::vector<int64_t> gid(rows);
  std::vector<float> scale(rows);
  for (int64_t r = 0; r < rows; ++r) {
    gid[r] = 7 * r + 3;
    scale[r] = 0.02f + 0.003f * static_cast<float>(r);
  }
  Buffer<int64_t> gid_device = to_device(gid);
  Buffer<float> scale_device = to_device(scale);
  const Matrix<const Bf16> x_host{x.data(), rows, cols, stride, Device::cpu};
  const Matrix<const Bf16> x_gpu{x_device.data(), rows, cols, stride, Device::cuda};
  const Span<const int64_t> gid_host{gid.data(), rows, Device::cpu}, gid_gpu{gid_device.data(), rows, Device::cuda};
  for (const float p : {0.0f, 0.5f}) {
    const kernels::EpilogueParams params{false, p, 23, 9};
    HostMatrix widened = dyadic_matrix(rows, cols, cols, 6);
    DeviceMatrix widened_device(widened);
    kernels::cpu::dropout_bf16(x_host, gid_host, params, widened.view());
    kernels::cuda::dropout_bf16(x_gpu, gid_gpu, params, widened_device.view());
    EXPECT_EQ(widened_device.host(), widened.data) << "dropout_bf16, p " << p;
    std::vector<Bf16> rounded(rows * cols, Bf16{0x1234});
    Buffer<Bf16> rounded_device = to_device(rounded);
    kernels::cpu::scale_round_bf16(Span<const float>{scale.data(), rows, Device::cpu},
                                   Matrix<const float>{widened.data.data(), rows, cols, cols, Device::cpu},
                                   Matrix<Bf16>{rounded.data(), rows, cols, cols, Device::cpu});
    kernels::cuda::scale_round_bf16(Span<const float>{scale_device.data(), rows, Device::cuda},
                                    widened_device.view(),
                                    Matrix<Bf16>{rounded_device.data(), rows, cols, cols, Device::cuda});
    EXPECT_EQ(bits_of(to_host(rounded_device)), bits_of(rounded)) << "scale_round_bf16, p " << p;
    for (const bool scaled : {true, false}) {
      std::vector<Bf16> fused(rows * cols, Bf16{0x1234});
      Buffer<Bf16> fused_device = to_device(fused);
      kernels::cpu::dropout_scale_round_bf16(
          x_host, gid_host, params, scaled ? Span<const float>{scale.data(), rows, Device::cpu} : Span<const float>{},
          Matrix<Bf16>{fused.data(), rows, cols, cols, Device::cpu});
      kernels::cuda::dropout_scale_round_bf16(
          x_gpu, gid_gpu, params,
          scaled ? Span<const float>{scale_device.data(), rows, Device::cuda} : Span<const float>{},
          Matrix<Bf16>{fused_device.data(), rows, cols, cols, Device::cuda});
      EXPECT_EQ(bits_of(to_host(fused_device)), bits_of(fused)) << "dropout_scale_round_bf16, p " << p
                                                                << " scaled " << scaled;
      if (scaled) EXPECT_EQ(bits_of(fused), bits_of(rounded)) << "fused vs two passes, p " << p;
    }
  }
}
