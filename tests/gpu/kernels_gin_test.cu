// GPU parity of GIN's learnable-epsilon ops (kernels/cuda/gin.cu) against halogen::kernels::cpu, on strided
// views with dyadic values (products and sums of dyadic values are exact, so the GPU's summation order cannot
// change the result).
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

TEST(GpuGin, OnePlusEpsAddMatchesCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t width : {1, 33, 256}) {
    HostMatrix x = dyadic_matrix(301, width, width + 2, 1), out = dyadic_matrix(301, width, width + 2, 2);
    DeviceMatrix x_device(x), out_device(out);
    std::vector<float> eps{0.25f};
    Buffer<float> eps_device = to_device(eps);
    kernels::cpu::one_plus_eps_add(x.view(), Span<const float>{eps.data(), 1, Device::cpu}, out.view());
    kernels::cuda::one_plus_eps_add(x_device.view(), Span<const float>{eps_device.data(), 1, Device::cuda},
                                    out_device.view());
    EXPECT_EQ(out_device.host(), out.data) << "width " << width;  // padding included: untouched on both
  }
}

TEST(GpuGin, DotAddMatchesCpuExactly) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t rows : {1, 777, 20011}) {  // one block, a few, and more than the 1024-block cap's one pass
    HostMatrix a = dyadic_matrix(rows, 24, 27, 3), b = dyadic_matrix(rows, 24, 27, 4);
    DeviceMatrix a_device(a), b_device(b);
    std::vector<float> result{0.5f};
    Buffer<float> result_device = to_device(result);
    kernels::cpu::dot_add(a.view(), b.view(), Span<float>{result.data(), 1, Device::cpu});
    kernels::cuda::dot_add(a_device.view(), b_device.view(),
                           Span<float>{result_device.data(), 1, Device::cuda});
    // Dyadic products summed: exact in double on both (block sums, then the blocks in a fixed order), and the
    // total rounded once to float and added, as on the CPU: equal bit for bit.
    EXPECT_EQ(to_host(result_device), result) << "rows " << rows;
  }
}
