// CSR x dense on the GPU through cuSPARSE's generic SpMM, with everything a matrix needs made once and cached.
//
// Index types. cuSPARSE's CSR descriptor takes one index type for row offsets and column ids, while our CSR
// has int64 row pointers and int32 column ids. The cache therefore keeps, per matrix, a device int32 copy of
// the row pointers (4 (rows + 1) bytes; exact since nnz < 2^31) and uses CUSPARSE_INDEX_32I. A matrix with
// 2^31 - 2^12 or more non-zeros instead gets an int64 copy of its column ids and CUSPARSE_INDEX_64I. Pattern
// matrices (values == nullptr) get a cached array of ones, since cuSPARSE needs values.
//
// Cache. Entry per matrix, keyed by (device, indptr, indices, values, rows, cols, nnz): the int32 row
// pointers (or int64 column ids, or ones). Sub-entry per (width, x stride, out stride, accumulate): its own
// sparse descriptor over those arrays (cuSPARSE keeps one active preprocessed buffer per sparse descriptor: a
// second cusparseSpMM_preprocess on a shared one would leave the first product without its analysis), the two
// dense descriptors (their data pointers are updated each call with cusparseDnMatSetValues), the workspace and
// the result of cusparseSpMM_preprocess. After the first call for a shape, a call allocates and creates nothing.
// The cache is process-wide, guarded by a mutex, and heap-allocated and never destroyed (no CUDA call from a
// static destructor after the runtime shut down); release_sparse_cache() empties it. Freeing a matrix's indptr,
// indices or values array through core's Buffer also drops its entry (the device-memory release hook calls
// forget_sparse_matrices_using), so stale entries cannot outlive their arrays; only arrays not allocated through
// Buffer, or views that start inside a larger Buffer, rely on release_sparse_cache().
//
// Failure safety. Entries own their descriptors (destructors destroy them, so an entry dropped half-built leaks
// nothing), and no device Buffer is ever freed while the mutex is held: freeing one calls
// forget_sparse_matrices_using(), which takes the mutex, and a std::mutex locked twice by one thread deadlocks.
// So entries are destroyed after the lock is released (release_sparse_cache, forget_sparse_matrices_using),
// spmm() builds a new entry in a holder declared before its lock (when building throws - out of memory, a
// cuSPARSE error - the lock is released first and the half-built entry destroyed after), and building never
// replaces a Buffer that holds memory (a refused algorithm's workspace is kept in the entry).

// Algorithm: CUSPARSE_SPMM_CSR_ALG3, which the cuSPARSE documentation lists as giving deterministic (bit-wise)
// results for each run (we only use op(A) = A, the case the guarantee covers; row-major dense matrices are
// supported since cuSPARSE 11.7.1), so that a GPU run repeats itself bit for bit and --resume continues
// exactly. Where ALG3 refuses a shape (any error status from cusparseSpMM_bufferSize or _preprocess:
// NOT_SUPPORTED, and INVALID_VALUE for some shapes; since CUDA 12.2.1 it no longer falls back silently) that
// (matrix, width) entry uses CUSPARSE_SPMM_ALG_DEFAULT and a warning names the shape, the refusal and both
// algorithms, once. The algorithm in use is logged once per process ("spmm: CUSPARSE_SPMM_CSR_ALG3 ..."). The environment variable
// HALOGEN_SPMM_ALG=default|csr1|csr2|csr3 selects another for benchmarking (read once).
//
// out is written with beta = 0 when not accumulating. cuSPARSE does not document that beta = 0 leaves C
// unread, so a never-written output holding NaN bit patterns could leak into the product (0 * NaN = NaN):
// device memory is therefore zeroed when it is allocated (device.cu), and GpuSpmm.OverwriteNeverReadsOut
// checks on the GPU that a NaN-filled out is overwritten.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/checks.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/element_cursor.h"
#include "kernels/cuda/ops.h"
#include "core/format.h"
#include "core/log.h"

namespace halogen::kernels::cuda {
namespace {

constexpr int kThreads = 256;

template <typename From, typename To>
__global__ void convert_kernel(const From* in, To* out, int64_t n) {  // in, out: (n)
  for (int64_t i = grid_first(); i < n; i += grid_step()) out[i] = static_cast<To>(in[i]);
}

// out = 0 where a row of A is empty is handled by cuSPARSE; this zeroes a whole (rows, cols) view (nnz == 0).
__global__ void zero_kernel(float* out, int64_t rows, int64_t cols, int64_t stride) {
  for (ElementCursor e(grid_first(), grid_step(), cols); e.row < rows; e.advance()) {
    const int64_t r = e.row, c = e.col;
    out[r * stride + c] = 0.0f;
  }
}

cusparseSpMMAlg_t spmm_algorithm() {
  static const cusparseSpMMAlg_t algorithm = [] {
    const char* name = std::getenv("HALOGEN_SPMM_ALG");
    if (name == nullptr) return CUSPARSE_SPMM_CSR_ALG3;  // deterministic (see the file comment)
    if (std::strcmp(name, "default") == 0) return CUSPARSE_SPMM_ALG_DEFAULT;
    if (std::strcmp(name, "csr1") == 0) return CUSPARSE_SPMM_CSR_ALG1;
    if (std::strcmp(name, "csr2") == 0) return CUSPARSE_SPMM_CSR_ALG2;
    if (std::strcmp(name, "csr3") == 0) return CUSPARSE_SPMM_CSR_ALG3;
    throw UserError(strformat("HALOGEN_SPMM_ALG=%s: expected default, csr1, csr2 or csr3", name));
  }();
  return algorithm;
}

const char* algorithm_name(cusparseSpMMAlg_t algorithm) {
  switch (algorithm) {
    case CUSPARSE_SPMM_ALG_DEFAULT: return "CUSPARSE_SPMM_ALG_DEFAULT";
    case CUSPARSE_SPMM_CSR_ALG1: return "CUSPARSE_SPMM_CSR_ALG1";
    case CUSPARSE_SPMM_CSR_ALG2: return "CUSPARSE_SPMM_CSR_ALG2";
    case CUSPARSE_SPMM_CSR_ALG3: return "CUSPARSE_SPMM_CSR_ALG3";
    default: return "another cuSPARSE SpMM algorithm";
  }
}

// Destroys descriptors from destructors, which must not throw: a failure is reported on stderr (the handle is
// lost either way).
void destroy_descriptor(cusparseDnMatDescr_t descriptor) {
  if (descriptor == nullptr) return;
  const cusparseStatus_t status = cusparseDestroyDnMat(descriptor);
  if (status != CUSPARSE_STATUS_SUCCESS)
    log::rank_line(strformat("warning: cusparseDestroyDnMat: %s", cusparseGetErrorString(status)));
}
void destroy_descriptor(cusparseConstSpMatDescr_t descriptor) {
  if (descriptor == nullptr) return;
  const cusparseStatus_t status = cusparseDestroySpMat(descriptor);
  if (status != CUSPARSE_STATUS_SUCCESS)
    log::rank_line(strformat("warning: cusparseDestroySpMat: %s", cusparseGetErrorString(status)));
}

// Owns its descriptors and workspace. Destroy only without the cache's mutex held (see the file comment).
struct DenseEntry {
  int64_t width = 0, x_stride = 0, out_stride = 0;
  bool accumulate = false;
  cusparseSpMMAlg_t algorithm = CUSPARSE_SPMM_ALG_DEFAULT;
  cusparseConstSpMatDescr_t a = nullptr;  // this product's own handle of A (see the file comment)
  cusparseDnMatDescr_t x = nullptr, out = nullptr;
  Buffer<char> workspace;
  // The workspace of an algorithm that refused the product after allocating it: kept until the entry dies,
  // because freeing it while the entry is built would happen under the cache's mutex (see the file comment).
  Buffer<char> refused_workspace;

  DenseEntry() = default;
  DenseEntry(const DenseEntry&) = delete;
  DenseEntry& operator=(const DenseEntry&) = delete;
  ~DenseEntry() {
    destroy_descriptor(x);
    destroy_descriptor(out);
    destroy_descriptor(a);
  }
};

struct SparseEntry {
  int device = -1;
  const int64_t* indptr = nullptr;
  const int32_t* indices = nullptr;
  const float* values = nullptr;
  int64_t rows = 0, cols = 0, nnz = 0;
  Buffer<int32_t> indptr32;   // (rows + 1) when nnz < 2^31
  Buffer<int64_t> indices64;  // (nnz) otherwise
  Buffer<float> ones;         // (nnz) for pattern matrices
  std::vector<std::unique_ptr<DenseEntry>> dense;

  SparseEntry() = default;
  SparseEntry(const SparseEntry&) = delete;
  SparseEntry& operator=(const SparseEntry&) = delete;
  ~SparseEntry() { dense.clear(); }  // dense entries first: their descriptors point into this entry's arrays

  bool matches(int dev, const CsrView& a) const {
    return device == dev && indptr == a.indptr && indices == a.indices && values == a.values && rows == a.rows &&
           cols == a.cols && nnz == a.nnz;
  }
};

struct SparseCache {
  std::mutex mutex;
  std::vector<std::unique_ptr<SparseEntry>> entries;
};

SparseCache& sparse_cache() {
  static SparseCache* cache = new SparseCache();  // never destroyed (see the file comment)
  return *cache;
}

// Fills `entry` (default-constructed, owned by the caller) for matrix `a`. On an exception the entry may be
// half-built; its destructor frees what was made.
void build_sparse_entry(SparseEntry& entry, int device, const CsrView& a, cudaStream_t stream) {
  // Check the row pointers' ends once per matrix (one small synchronous copy, first call only).
  int64_t ends[2] = {-1, -1};
  CUDA_CHECK(cudaMemcpyAsync(&ends[0], a.indptr, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaMemcpyAsync(&ends[1], a.indptr + a.rows, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  HALOGEN_ASSERT(ends[0] == 0 && ends[1] == a.nnz, "indptr runs from %lld to %lld, expected 0 to nnz = %lld",
                 (long long)ends[0], (long long)ends[1], (long long)a.nnz);

  entry.device = device;
  entry.indptr = a.indptr;
  entry.indices = a.indices;
  entry.values = a.values;
  entry.rows = a.rows;
  entry.cols = a.cols;
  entry.nnz = a.nnz;
  if (a.values == nullptr) {
    entry.ones = Buffer<float>(a.nnz, Device::cuda);
    fill(entry.ones.span(), 1.0f, stream);
  }
  // 32-bit indices below 2^31 - 2^12 non-zeros: cusparseSpMM was reported to fail (CUSPARSE_STATUS_INTERNAL_ERROR)
  // with 32-bit indices just under 2^31 non-zeros (JuliaGPU/CUDA.jl#2555); 64-bit ids cost 4 bytes per nnz more.
  constexpr int64_t kInt32Max = 2147483647, kInt32Margin = 4096;
  if (a.nnz < kInt32Max - kInt32Margin && a.rows < kInt32Max && a.cols <= kInt32Max) {
    entry.indptr32 = Buffer<int32_t>(a.rows + 1, Device::cuda);
    convert_kernel<<<grid_for(a.rows + 1, kThreads), kThreads, 0, stream>>>(a.indptr, entry.indptr32.data(),
                                                                             a.rows + 1);
    HALOGEN_CUDA_CHECK_LAUNCH();
  } else {
    entry.indices64 = Buffer<int64_t>(a.nnz, Device::cuda);
    convert_kernel<<<grid_for(a.nnz, kThreads), kThreads, 0, stream>>>(a.indices, entry.indices64.data(), a.nnz);
    HALOGEN_CUDA_CHECK_LAUNCH();
  }
}

// A new cuSPARSE handle of the entry's matrix (32-bit row pointers and ids, or int64 both).
void create_sparse_descriptor(const SparseEntry& s, cusparseConstSpMatDescr_t* descriptor) {
  const float* values = s.values != nullptr ? s.values : s.ones.data();
  if (s.indices64.size() == 0) {
    CUSPARSE_CHECK(cusparseCreateConstCsr(descriptor, s.rows, s.cols, s.nnz, s.indptr32.data(), s.indices, values,
                                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                                          CUDA_R_32F));
  } else {
    CUSPARSE_CHECK(cusparseCreateConstCsr(descriptor, s.rows, s.cols, s.nnz, s.indptr, s.indices64.data(), values,
                                          CUSPARSE_INDEX_64I, CUSPARSE_INDEX_64I, CUSPARSE_INDEX_BASE_ZERO,
                                          CUDA_R_32F));
  }
}

// Fills `entry` (default-constructed, owned by the caller) for products of `sparse` with dense matrices of
// x's and out's shapes and strides. Half-built on an exception; its destructor frees what was made.
void build_dense_entry(DenseEntry& entry, cusparseHandle_t handle, const SparseEntry& sparse, Matrix<const float> x,
                       Matrix<float> out, int64_t x_stride, int64_t out_stride, bool accumulate) {
  entry.width = x.cols;
  entry.x_stride = x_stride;
  entry.out_stride = out_stride;
  entry.accumulate = accumulate;
  create_sparse_descriptor(sparse, &entry.a);
  CUSPARSE_CHECK(cusparseCreateDnMat(&entry.x, x.rows, x.cols, x_stride, const_cast<float*>(x.data), CUDA_R_32F,
                                     CUSPARSE_ORDER_ROW));
  CUSPARSE_CHECK(cusparseCreateDnMat(&entry.out, out.rows, out.cols, out_stride, out.data, CUDA_R_32F,
                                     CUSPARSE_ORDER_ROW));
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  // Workspace and pattern analysis for `algorithm`; CUSPARSE_STATUS_NOT_SUPPORTED when it refuses this product.
  const auto prepare = [&](cusparseSpMMAlg_t algorithm) {
    entry.algorithm = algorithm;
    size_t workspace_bytes = 0;
    cusparseStatus_t status = cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                      CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, entry.a,
                                                      entry.x, &beta, entry.out, CUDA_R_32F, algorithm,
                                                      &workspace_bytes);
    if (status != CUSPARSE_STATUS_SUCCESS) return status;
    // Never a null pointer (a Buffer of 0 bytes has none, which cuSPARSE may refuse); replaces an empty one.
    entry.workspace = Buffer<char>(std::max<int64_t>(static_cast<int64_t>(workspace_bytes), 256), Device::cuda);
    // Analyses the sparsity pattern once (CSR_ALG1, CSR_ALG3); later cusparseSpMM calls must pass the same
    // workspace, which this entry keeps. The default algorithm may answer NOT_SUPPORTED: it needs none.
    status = cusparseSpMM_preprocess(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                     &alpha, entry.a, entry.x, &beta, entry.out, CUDA_R_32F, algorithm,
                                     entry.workspace.data());
    if (status == CUSPARSE_STATUS_NOT_SUPPORTED && algorithm == CUSPARSE_SPMM_ALG_DEFAULT)
      return CUSPARSE_STATUS_SUCCESS;
    return status;
  };
  static std::once_flag announced;  // which algorithm the products use, once per process (rank 0 prints it)
  std::call_once(announced, [] {
    log::info(strformat("spmm: %s%s", algorithm_name(spmm_algorithm()),
                        spmm_algorithm() == CUSPARSE_SPMM_CSR_ALG3 ? " (bitwise reproducible)" : " (HALOGEN_SPMM_ALG)"));
  });
  cusparseStatus_t status = prepare(spmm_algorithm());
  if (status != CUSPARSE_STATUS_SUCCESS && entry.algorithm != CUSPARSE_SPMM_ALG_DEFAULT) {
    // Any refusal, not only NOT_SUPPORTED: cuSPARSE versions differ in how they refuse a shape (INVALID_VALUE
    // for some row-major widths), and the default algorithm computes the same product.
    log::rank_line(strformat("warning: cuSPARSE SpMM %s refused A (%lld, %lld, nnz %lld) times a (%lld, %lld) "
                             "row-major matrix (%s): this product runs CUSPARSE_SPMM_ALG_DEFAULT, which is not "
                             "documented as bitwise reproducible",
                             algorithm_name(entry.algorithm), (long long)sparse.rows, (long long)sparse.cols,
                             (long long)sparse.nnz, (long long)x.rows, (long long)x.cols,
                             cusparseGetErrorName(status)));
    entry.refused_workspace = std::move(entry.workspace);  // moved, not freed: we hold the cache's mutex
    status = prepare(CUSPARSE_SPMM_ALG_DEFAULT);
  }
  CUSPARSE_CHECK(status);
}

// Fault injection for the GPU test of the failure path: HALOGEN_TEST_SPMM_CACHE_FAIL=1 makes building a sparse
// entry throw after its buffers were allocated (the unwinding that used to deadlock on the cache's mutex). Read
// on every cache miss (rare), so a test can set and unset it.
bool inject_cache_failure() {
  const char* value = std::getenv("HALOGEN_TEST_SPMM_CACHE_FAIL");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace

void spmm(const CsrView& a, Matrix<const float> x, Matrix<float> out, bool accumulate, Stream stream) {
  detail::require_device(x, "spmm x");
  detail::require_device(out, "spmm out");
  HALOGEN_ASSERT(a.rows >= 0 && a.cols >= 0 && a.nnz >= 0);
  HALOGEN_ASSERT(x.rows == a.cols, "A is (%lld, %lld) but x has %lld rows", (long long)a.rows, (long long)a.cols,
                 (long long)x.rows);
  HALOGEN_ASSERT(out.rows == a.rows && out.cols == x.cols, "A x is (%lld, %lld) but out is (%lld, %lld)",
                 (long long)a.rows, (long long)x.cols, (long long)out.rows, (long long)out.cols);
  HALOGEN_ASSERT(!a.scaled(),
                 "the CUDA spmm takes stored values, not row/column scales (nn::DeviceCsr materialises them on "
                 "the GPU)");
  if (a.rows == 0 || x.cols == 0) return;
  HALOGEN_ASSERT(a.device == Device::cuda, "sparse matrix is a %s view, the CUDA kernel needs device memory",
                 device_name(a.device));
  HALOGEN_ASSERT(a.indptr != nullptr && (a.nnz == 0 || a.indices != nullptr));
  const cudaStream_t cuda_stream = to_cuda(stream);
  if (a.nnz == 0) {  // A = 0: out = 0, or unchanged when accumulating (cuSPARSE is not asked about empty A)
    if (!accumulate) {
      zero_kernel<<<grid_for(out.size(), kThreads), kThreads, 0, cuda_stream>>>(out.data, out.rows, out.cols,
                                                                                detail::row_stride(out));
      HALOGEN_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  const int64_t x_stride = detail::row_stride(x), out_stride = detail::row_stride(out);
  ThreadContext& context = thread_context();
  CUSPARSE_CHECK(cusparseSetStream(context.cusparse, cuda_stream));

  SparseCache& cache = sparse_cache();
  SparseEntry* sparse = nullptr;
  DenseEntry* dense = nullptr;
  // Declared before the lock, so destroyed after it is released when building throws (see the file comment).
  std::unique_ptr<SparseEntry> new_sparse;
  std::unique_ptr<DenseEntry> new_dense;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (auto& entry : cache.entries)
      if (entry->matches(context.device, a)) sparse = entry.get();
    if (sparse == nullptr) {
      new_sparse = std::make_unique<SparseEntry>();
      build_sparse_entry(*new_sparse, context.device, a, cuda_stream);
      if (inject_cache_failure())
        throw UserError("HALOGEN_TEST_SPMM_CACHE_FAIL: injected failure building a cache entry");
      cache.entries.push_back(std::move(new_sparse));
      sparse = cache.entries.back().get();
    }
    for (auto& entry : sparse->dense)
      if (entry->width == x.cols && entry->x_stride == x_stride && entry->out_stride == out_stride &&
          entry->accumulate == accumulate)
        dense = entry.get();
    if (dense == nullptr) {
      new_dense = std::make_unique<DenseEntry>();
      build_dense_entry(*new_dense, context.cusparse, *sparse, x, out, x_stride, out_stride, accumulate);
      sparse->dense.push_back(std::move(new_dense));
      dense = sparse->dense.back().get();
    }
  }
  CUSPARSE_CHECK(cusparseDnMatSetValues(dense->x, const_cast<float*>(x.data)));
  CUSPARSE_CHECK(cusparseDnMatSetValues(dense->out, out.data));
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  CUSPARSE_CHECK(cusparseSpMM(context.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              &alpha, dense->a, dense->x, &beta, dense->out, CUDA_R_32F, dense->algorithm,
                              dense->workspace.data()));
}

void release_sparse_cache() {
  // Entries leave the cache under the lock and are destroyed after it: freeing their buffers goes through
  // the release hook, which calls forget_sparse_matrices_using() and takes the lock again.
  std::vector<std::unique_ptr<SparseEntry>> released;
  {
    SparseCache& cache = sparse_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    released.swap(cache.entries);
  }
  if (released.empty()) return;
  int current = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  for (auto& entry : released) {
    // Work queued on any stream may still read the cached arrays: let it finish before freeing them.
    CUDA_CHECK(cudaSetDevice(entry->device));
    CUDA_CHECK(cudaDeviceSynchronize());
    entry.reset();  // destroys the descriptors, frees the buffers (cudaFree through core's hooks) on their device
  }
  CUDA_CHECK(cudaSetDevice(current));
}

void forget_sparse_matrices_using(const void* pointer) {
  std::vector<std::unique_ptr<SparseEntry>> dropped;
  {
    SparseCache& cache = sparse_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    for (auto& entry : cache.entries) {
      if (entry->indptr == pointer || entry->indices == pointer || entry->values == pointer)
        dropped.push_back(std::move(entry));
    }
    cache.entries.erase(std::remove(cache.entries.begin(), cache.entries.end(), nullptr), cache.entries.end());
  }
  // Destroyed here, after the lock: cudaFree (of the caller's array and of these entries' buffers) waits for
  // queued work; the descriptors are host objects.
  dropped.clear();
}

}  // namespace halogen::kernels::cuda
