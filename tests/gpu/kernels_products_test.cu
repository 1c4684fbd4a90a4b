// GPU parity of the product and row ops: cuSPARSE spmm, cuBLAS gemm, gather_rows, scatter_add_rows against
// halogen::kernels::cpu. Inputs are dyadic (parity_util.h), so results must match the CPU bit for bit.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

// GPU spmm of (a, x) into out (which starts as `out_init`) equals the CPU's, padding included.
void expect_spmm_matches_cpu(const HostCsr& a, int64_t width, int64_t x_stride, int64_t out_stride, bool accumulate,
                             bool pattern, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "A (" << a.rows << ", " << a.cols << ") nnz " << a.indices.size() << " width "
                                    << width << " strides " << x_stride << "/" << out_stride
                                    << (accumulate ? " +=" : " =") << (pattern ? " pattern" : ""));
  HostMatrix x = dyadic_matrix(a.cols, width, x_stride, seed);
  HostMatrix out = dyadic_matrix(a.rows, width, out_stride, seed + 1);
  DeviceCsr a_device(a);
  DeviceMatrix x_device(x), out_device(out);
  kernels::cpu::spmm(a.view(pattern), x.view(), out.view(), accumulate);
  kernels::cuda::spmm(a_device.view(pattern), x_device.view(), out_device.view(), accumulate);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();  // a_device is freed at the end of this scope
}

}  // namespace

TEST(GpuSpmm, MatchesCpuOnShapesWidthsAndEmptyRows) {
  HALOGEN_REQUIRE_GPU();
  uint64_t seed = 1;
  for (int64_t width : {1, 5, 32, 33, 100, 256}) {
    const HostCsr a = random_csr(300, 200, 12, 7, seed);  // every 7th row empty
    for (bool accumulate : {false, true})
      for (bool pattern : {false, true}) expect_spmm_matches_cpu(a, width, width, width, accumulate, pattern, ++seed);
  }
}

TEST(GpuSpmm, StridedViewsOneRowEmptyMatrixAndHighDegree) {
  HALOGEN_REQUIRE_GPU();
  expect_spmm_matches_cpu(random_csr(50, 40, 6, 0, 11), 37, 40, 45, false, false, 12);  // strides > width
  expect_spmm_matches_cpu(random_csr(50, 40, 6, 0, 13), 37, 40, 45, true, false, 14);
  expect_spmm_matches_cpu(random_csr(1, 64, 64, 0, 15), 70, 70, 70, false, false, 16);  // one row
  expect_spmm_matches_cpu(random_csr(64, 1, 1, 3, 17), 3, 3, 3, false, false, 18);      // one column
  expect_spmm_matches_cpu(random_csr(20, 30, 5, 1, 19), 8, 8, 8, false, false, 20);     // all rows empty: 0
  expect_spmm_matches_cpu(random_csr(20, 30, 5, 1, 21), 8, 8, 8, true, false, 22);      // unchanged
  expect_spmm_matches_cpu(random_csr(40, 5000, 3000, 0, 23), 9, 9, 9, false, false, 24);  // long rows
}

TEST(GpuSpmm, CachedMatrixIsCorrectWithNewDenseBuffersAndAfterRelease) {
  HALOGEN_REQUIRE_GPU();
  const HostCsr a = random_csr(500, 400, 20, 9, 31);
  DeviceCsr a_device(a);
  // The same matrix, width and strides with different x/out buffers: the cached descriptors must follow.
  for (uint64_t seed : {32, 33, 34}) {
    HostMatrix x = dyadic_matrix(a.cols, 48, 48, seed), out = dyadic_matrix(a.rows, 48, 48, seed + 100);
    DeviceMatrix x_device(x), out_device(out);
    kernels::cpu::spmm(a.view(), x.view(), out.view(), seed == 33);
    kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), seed == 33);
    EXPECT_EQ(out_device.host(), out.data) << "seed " << seed;
  }
  // Changing the values (same arrays): cuSPARSE reads them at each call, so results follow.
  HostCsr doubled = a;
  for (float& v : doubled.values) v *= 2.0f;
  a_device.values.copy_from_host(doubled.values.data(), static_cast<int64_t>(doubled.values.size()));
  HostMatrix x = dyadic_matrix(a.cols, 48, 48, 35), out = dyadic_matrix(a.rows, 48, 48, 36);
  DeviceMatrix x_device(x), out_device(out);
  kernels::cpu::spmm(doubled.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
  // A new matrix after the release (its arrays may reuse the freed addresses).
  const HostCsr b = random_csr(500, 400, 20, 5, 37);
  a_device = DeviceCsr(b);
  kernels::cpu::spmm(b.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
}

TEST(GpuSpmm, FreeingAMatrixDropsItsCacheEntry) {
  HALOGEN_REQUIRE_GPU();
  // B is A with its rows in reverse order: same shape and nnz, other row pointers. Freeing A without
  // release_sparse_cache() and allocating B (cudaMalloc tends to hand back the same addresses) must not
  // reuse A's cached int32 copy of the row pointers.
  const HostCsr a = random_csr(256, 128, 10, 6, 61);
  HostCsr b;
  b.rows = a.rows;
  b.cols = a.cols;
  for (int64_t r = a.rows - 1; r >= 0; --r) {
    b.indices.insert(b.indices.end(), a.indices.begin() + a.indptr[r], a.indices.begin() + a.indptr[r + 1]);
    b.values.insert(b.values.end(), a.values.begin() + a.indptr[r], a.values.begin() + a.indptr[r + 1]);
    b.indptr.push_back(static_cast<int64_t>(b.indices.size()));
  }
  ASSERT_NE(b.indptr, a.indptr);
  HostMatrix x = dyadic_matrix(a.cols, 24, 24, 62), out = dyadic_matrix(a.rows, 24, 24, 63);
  DeviceMatrix x_device(x), out_device(out);
  {
    DeviceCsr a_device(a);
    kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
  }  // a_device freed here, cache not released explicitly
  DeviceCsr b_device(b);
  kernels::cpu::spmm(b.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(b_device.view(), x_device.view(), out_device.view(), false);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
}

TEST(GpuSpmm, OverwriteNeverReadsOut) {
  HALOGEN_REQUIRE_GPU();
  // "=" must not read `out` (freshly allocated memory may hold NaN bit patterns): beta = 0 in cuSPARSE.
  const HostCsr a = random_csr(100, 80, 8, 5, 51);
  HostMatrix x = dyadic_matrix(a.cols, 40, 40, 52), out = dyadic_matrix(a.rows, 40, 40, 53);
  for (float& v : out.data) v = std::numeric_limits<float>::quiet_NaN();
  DeviceCsr a_device(a);
  DeviceMatrix x_device(x), out_device(out);
  kernels::cpu::spmm(a.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
}

TEST(GpuSpmm, RunsOnACreatedStream) {
  HALOGEN_REQUIRE_GPU();
  void* stream = cuda::create_stream();
  const HostCsr a = random_csr(200, 150, 10, 4, 41);
  HostMatrix x = dyadic_matrix(a.cols, 64, 64, 42), out = dyadic_matrix(a.rows, 64, 64, 43);
  DeviceCsr a_device(a);
  DeviceMatrix x_device(x), out_device(out);
  kernels::cpu::spmm(a.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false, stream);
  cuda::synchronize_stream(stream);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
  cuda::destroy_stream(stream);
}

TEST(GpuSpmm, RepeatsBitForBitRunToRun) {
  HALOGEN_REQUIRE_GPU();
  // The default algorithm (CUSPARSE_SPMM_CSR_ALG3) is documented as deterministic: the same product twice, from
  // fresh cache entries, gives the same bits. Non-dyadic values and rows of up to 3000 non-zeros, so that a
  // different summation order (e.g. a split row summed with atomics) would change low bits.
  HostCsr a = random_csr(300, 4000, 3000, 7, 61);
  const std::vector<float> weights = uniform_values(static_cast<int64_t>(a.values.size()), 62, -1.0f, 1.0f);
  a.values = weights;
  HostMatrix x{a.cols, 64, 64, uniform_values(a.cols * 64, 63, -1.0f, 1.0f)};
  std::vector<std::vector<float>> results;
  for (int run = 0; run < 3; ++run) {
    DeviceCsr a_device(a);
    DeviceMatrix x_device(x), out_device(dyadic_matrix(a.rows, 64, 64, 64));
    kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
    results.push_back(out_device.host());
    kernels::cuda::release_sparse_cache();
  }
  for (int run = 1; run < 3; ++run)
    EXPECT_EQ(std::memcmp(results[0].data(), results[run].data(), results[0].size() * sizeof(float)), 0) << run;
}

TEST(GpuSpmm, FailedCacheEntryNeitherDeadlocksNorLeaks) {
  HALOGEN_REQUIRE_GPU();
  // Building a cache entry that throws after its buffers were allocated (fault injection, spmm.cu): the
  // exception reaches the caller (the entry's buffers are freed while the cache's mutex is NOT held, or this
  // call would never return), no device memory stays allocated, and the next call works.
  const HostCsr a = random_csr(100, 80, 8, 5, 71);
  HostMatrix x = dyadic_matrix(a.cols, 16, 16, 72), out = dyadic_matrix(a.rows, 16, 16, 73);
  DeviceCsr a_device(a);
  DeviceMatrix x_device(x), out_device(out);
  kernels::cuda::release_sparse_cache();
  const int64_t before = detail::bytes_in_use(Device::cuda);
  setenv("HALOGEN_TEST_SPMM_CACHE_FAIL", "1", 1);
  EXPECT_THROW(kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false), UserError);
  unsetenv("HALOGEN_TEST_SPMM_CACHE_FAIL");
  EXPECT_EQ(detail::bytes_in_use(Device::cuda), before);
  kernels::cpu::spmm(a.view(), x.view(), out.view(), false);
  kernels::cuda::spmm(a_device.view(), x_device.view(), out_device.view(), false);
  EXPECT_EQ(out_device.host(), out.data);
  kernels::cuda::release_sparse_cache();
}

TEST(GpuGemm, MatchesCpuForAllTransposesStridesAndScalars) {
  HALOGEN_REQUIRE_GPU();
  struct Shape { int64_t m, n, k; };
  uint64_t seed = 100;
  for (const Shape s : {Shape{37, 5, 100}, Shape{1, 256, 33}, Shape{200, 47, 1}, Shape{64, 64, 64}})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f, -2.0f}) {
          SCOPED_TRACE(::testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k << " ta " << ta << " tb "
                                            << tb << " beta " << beta);
          const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
          const int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
          HostMatrix a = dyadic_matrix(a_rows, a_cols, a_cols + 3, ++seed);  // padded rows
          HostMatrix b = dyadic_matrix(b_rows, b_cols, b_cols, ++seed);
          HostMatrix c = dyadic_matrix(s.m, s.n, s.n + 1, ++seed);
          DeviceMatrix a_device(a), b_device(b), c_device(c);
          kernels::cpu::gemm(a.view(), ta, b.view(), tb, c.view(), 0.5f, beta);
          kernels::cuda::gemm(a_device.view(), ta, b_device.view(), tb, c_device.view(), 0.5f, beta);
          EXPECT_EQ(c_device.host(), c.data);
        }
}

TEST(GpuGemm, InnerDimensionZeroScalesC) {
  HALOGEN_REQUIRE_GPU();
  for (float beta : {0.0f, 3.0f}) {
    HostMatrix a = dyadic_matrix(6, 0, 0, 1), b = dyadic_matrix(0, 7, 7, 2), c = dyadic_matrix(6, 7, 7, 3);
    c.data[5] = std::numeric_limits<float>::quiet_NaN();  // beta == 0 must not read c
    DeviceMatrix a_device(a), b_device(b), c_device(c);
    kernels::cpu::gemm(a.view(), false, b.view(), false, c.view(), 1.0f, beta);
    kernels::cuda::gemm(a_device.view(), false, b_device.view(), false, c_device.view(), 1.0f, beta);
    const std::vector<float> got = c_device.host();
    for (size_t i = 0; i < got.size(); ++i) {
      if (beta == 0.0f) EXPECT_EQ(got[i], 0.0f) << i;
      else if (i != 5) EXPECT_EQ(got[i], c.data[i]) << i;
    }
  }
}

TEST(GpuGemm, Fp32ByDefaultTf32OnlyWhenAsked) {
  HALOGEN_REQUIRE_GPU();
  // a = 1 + 2^-12 everywhere, b = 1: each product is exact in FP32 (24-bit significand) and every partial sum
  // j (1 + 2^-12), j <= 64, needs at most 19 significant bits, so FP32 gives exactly 64 + 2^-6 in any summation
  // order. TF32 keeps 10 explicit significand bits, so a rounds to 1 and the sum is 64. The shape (256 x 256 x
  // 64) is large enough for cuBLAS to pick a tensor-core kernel when TF32 is allowed.
  const int64_t m = 256, n = 256, k = 64;
  const float a_value = 1.0f + 1.0f / 4096.0f;
  HostMatrix a{m, k, k, std::vector<float>(m * k, a_value)}, b{k, n, n, std::vector<float>(k * n, 1.0f)};
  HostMatrix c{m, n, n, std::vector<float>(m * n, 0.0f)};
  DeviceMatrix a_device(a), b_device(b), c_device(c);
  const float fp32_exact = 64.0f + 1.0f / 64.0f;
  ASSERT_FALSE(kernels::cuda::gemm_tf32()) << "FP32 must be the default";
  kernels::cuda::gemm(a_device.view(), false, b_device.view(), false, c_device.view(), 1.0f, 0.0f);
  for (float v : c_device.host()) ASSERT_EQ(v, fp32_exact);
  kernels::cuda::set_gemm_tf32(true);
  kernels::cuda::gemm(a_device.view(), false, b_device.view(), false, c_device.view(), 1.0f, 0.0f);
  const std::vector<float> tf32 = c_device.host();
  kernels::cuda::set_gemm_tf32(false);
  EXPECT_EQ(tf32[0], 64.0f) << "TF32 rounds 1 + 2^-12 to 1 (if this fails, cuBLAS did not use TF32 tensor cores)";
  kernels::cuda::gemm(a_device.view(), false, b_device.view(), false, c_device.view(), 1.0f, 0.0f);
  EXPECT_EQ(c_device.host()[0], fp32_exact) << "switching back to FP32";
}

TEST(GpuRows, GatherAndScatterAddMatchCpuWithDuplicates) {
  HALOGEN_REQUIRE_GPU();
  for (int64_t width : {1, 31, 33, 128}) {
    SCOPED_TRACE(::testing::Message() << "width " << width);
    const int64_t n = 97, m = 300;  // m > n: many duplicate indices
    std::vector<int32_t> idx(m);
    for (int64_t i = 0; i < m; ++i) idx[i] = static_cast<int32_t>((i * 37 + 11) % n);
    Buffer<int32_t> idx_device = to_device(idx);
    const Span<const int32_t> idx_host_span{idx.data(), m, Device::cpu};
    const Span<const int32_t> idx_device_span{idx_device.data(), m, Device::cuda};

    HostMatrix x = dyadic_matrix(n, width, width + 2, 200 + width), packed = dyadic_matrix(m, width, width, 300);
    DeviceMatrix x_device(x), packed_device(packed);
    kernels::cpu::gather_rows(x.view(), idx_host_span, packed.view());
    kernels::cuda::gather_rows(x_device.view(), idx_device_span, packed_device.view());
    EXPECT_EQ(packed_device.host(), packed.data);

    HostMatrix out = dyadic_matrix(n, width, width, 400 + width);
    DeviceMatrix out_device(out);
    kernels::cpu::scatter_add_rows(packed.view(), idx_host_span, out.view());
    kernels::cuda::scatter_add_rows(packed_device.view(), idx_device_span, out_device.view());
    EXPECT_EQ(out_device.host(), out.data);  // exact: dyadic sums are order-independent
  }
}

TEST(GpuRows, EmptyIndexListsDoNothing) {
  HALOGEN_REQUIRE_GPU();
  HostMatrix x = dyadic_matrix(5, 4, 4, 1);
  DeviceMatrix x_device(x);
  Matrix<float> none{nullptr, 0, 4, 4, Device::cuda};
  kernels::cuda::gather_rows(x_device.view(), Span<const int32_t>{}, none);
  kernels::cuda::scatter_add_rows(none, Span<const int32_t>{}, x_device.view());
  EXPECT_EQ(x_device.host(), x.data);
}
