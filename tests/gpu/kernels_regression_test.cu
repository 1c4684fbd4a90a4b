// GPU parity of kernels::squared_error (temporal node regression) against halogen::kernels::cpu.
#include <cmath>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

TEST(GpuSquaredError, MatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t rows : {1, 77, 5000})
    for (int64_t cols : {1, 4}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      HostMatrix y{rows, cols, cols + 1, uniform_values(rows * (cols + 1), 21 + rows, -2.0f, 2.0f)};
      HostMatrix target{rows, cols, cols, uniform_values(rows * cols, 22 + rows, -2.0f, 2.0f)};
      HostMatrix grad = dyadic_matrix(rows, cols, cols, 23), grad_cpu = grad;
      DeviceMatrix y_device(y), target_device(target), grad_device(grad);
      const double cpu_sum = kernels::cpu::squared_error(Matrix<const float>(y.view()),
                                                         Matrix<const float>(target.view()), 0.5, grad_cpu.view());
      const double gpu_sum = kernels::cuda::squared_error(Matrix<const float>(y_device.view()),
                                                          Matrix<const float>(target_device.view()), 0.5,
                                                          grad_device.view());
      // Same double arithmetic per element; only the order of the additions differs (5000 x 4 terms <= 16 in
      // double): relative 1e-12.
      EXPECT_NEAR(gpu_sum, cpu_sum, 1e-12 * std::max(1.0, cpu_sum));
      EXPECT_EQ(grad_device.host(), grad_cpu.data) << "the gradient is one rounded product per element";
    }
}
