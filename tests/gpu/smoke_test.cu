// GPU smoke tests: cuSPARSE SpMM on a small CSR against a CPU product; NCCL allreduce on one rank.
#include <cuda_runtime.h>
#include <cusparse.h>
#include <nccl.h>

#include <vector>

#include "core/buffer.h"
#include "core/check.h"
#include "gpu_test_util.h"

using namespace halogen;

TEST(GpuSmoke, CusparseSpmmMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  // 4x3 CSR with an empty row (row 2); X is 3x5 (width not a multiple of 32).
  const std::vector<int> indptr = {0, 2, 3, 3, 6};
  const std::vector<int> indices = {0, 2, 1, 0, 1, 2};
  const std::vector<float> values = {1.f, 2.f, -1.f, 0.5f, 3.f, -2.f};
  const int rows = 4, inner = 3, width = 5;
  std::vector<float> x(inner * width);
  for (int i = 0; i < inner * width; ++i) x[i] = 0.25f * i - 1.f;
  std::vector<float> expected(rows * width, 0.f);
  for (int r = 0; r < rows; ++r)
    for (int k = indptr[r]; k < indptr[r + 1]; ++k)
      for (int c = 0; c < width; ++c) expected[r * width + c] += values[k] * x[indices[k] * width + c];

  Buffer<int> d_indptr(indptr.size(), Device::cuda), d_indices(indices.size(), Device::cuda);
  Buffer<float> d_values(values.size(), Device::cuda), d_x(x.size(), Device::cuda), d_y(rows * width, Device::cuda);
  d_indptr.copy_from_host(indptr.data(), indptr.size());
  d_indices.copy_from_host(indices.data(), indices.size());
  d_values.copy_from_host(values.data(), values.size());
  d_x.copy_from_host(x.data(), x.size());

  cusparseHandle_t handle;
  CUSPARSE_CHECK(cusparseCreate(&handle));
  cusparseSpMatDescr_t a;
  cusparseDnMatDescr_t xd, yd;
  CUSPARSE_CHECK(cusparseCreateCsr(&a, rows, inner, indices.size(), d_indptr.data(), d_indices.data(),
                                   d_values.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CUSPARSE_CHECK(cusparseCreateDnMat(&xd, inner, width, width, d_x.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  CUSPARSE_CHECK(cusparseCreateDnMat(&yd, rows, width, width, d_y.data(), CUDA_R_32F, CUSPARSE_ORDER_ROW));
  const float alpha = 1.f, beta = 0.f;
  size_t workspace_bytes = 0;
  CUSPARSE_CHECK(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                         &alpha, a, xd, &beta, yd, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT,
                                         &workspace_bytes));
  Buffer<char> workspace(static_cast<int64_t>(workspace_bytes), Device::cuda);
  CUSPARSE_CHECK(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a,
                              xd, &beta, yd, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, workspace.data()));
  std::vector<float> y(rows * width);
  d_y.copy_to_host(y.data());
  // Each output is a sum of at most 3 products of exactly representable values: float rounding only.
  for (int i = 0; i < rows * width; ++i) EXPECT_NEAR(y[i], expected[i], 1e-5f) << "element " << i;
  CUSPARSE_CHECK(cusparseDestroySpMat(a));
  CUSPARSE_CHECK(cusparseDestroyDnMat(xd));
  CUSPARSE_CHECK(cusparseDestroyDnMat(yd));
  CUSPARSE_CHECK(cusparseDestroy(handle));
}

TEST(GpuSmoke, NcclAllreduceOnOneRank) {
  HALOGEN_REQUIRE_GPU();
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, 1, id, 0));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  std::vector<float> host = {1.f, 2.f, 3.f, 4.f};
  Buffer<float> in(4, Device::cuda), out(4, Device::cuda);
  in.copy_from_host(host.data(), 4);
  out.zero();
  NCCL_CHECK(ncclAllReduce(in.data(), out.data(), 4, ncclFloat, ncclSum, comm, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> result(4);
  out.copy_to_host(result.data());
  EXPECT_EQ(result, host);  // one rank: the sum is the input itself, exactly
  NCCL_CHECK(ncclCommDestroy(comm));
  CUDA_CHECK(cudaStreamDestroy(stream));
}
