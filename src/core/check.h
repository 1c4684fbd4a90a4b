#pragma once
// Checked calls into CUDA, cuSPARSE, cuBLAS, NCCL and MPI. A failure prints
// "[rank r/P host] file:line <call>: <library message>" and aborts the whole job (MPI_Abort when MPI is up),
// so no rank is left waiting in a collective. These are macros only: this header includes no CUDA or MPI
// header, and each macro may be used only where the library's own header is already included.
#include <string>

#include "core/error.h"

#define CUDA_CHECK(call)                                                                              \
  do {                                                                                                \
    cudaError_t halogen_status_ = (call);                                                             \
    if (halogen_status_ != cudaSuccess)                                                               \
      ::halogen::fatal(__FILE__, __LINE__,                                                            \
                       std::string(#call ": ") + cudaGetErrorName(halogen_status_) + " (" +           \
                           cudaGetErrorString(halogen_status_) + ")");                                \
  } while (0)

#define CUSPARSE_CHECK(call)                                                                          \
  do {                                                                                                \
    cusparseStatus_t halogen_status_ = (call);                                                        \
    if (halogen_status_ != CUSPARSE_STATUS_SUCCESS)                                                   \
      ::halogen::fatal(__FILE__, __LINE__,                                                            \
                       std::string(#call ": ") + cusparseGetErrorString(halogen_status_));            \
  } while (0)

#define CUBLAS_CHECK(call)                                                                            \
  do {                                                                                                \
    cublasStatus_t halogen_status_ = (call);                                                          \
    if (halogen_status_ != CUBLAS_STATUS_SUCCESS)                                                     \
      ::halogen::fatal(__FILE__, __LINE__,                                                            \
                       std::string(#call ": ") + cublasGetStatusString(halogen_status_));             \
  } while (0)

#define NCCL_CHECK(call)                                                                              \
  do {                                                                                                \
    ncclResult_t halogen_status_ = (call);                                                            \
    if (halogen_status_ != ncclSuccess && halogen_status_ != ncclInProgress)                          \
      ::halogen::fatal(__FILE__, __LINE__,                                                            \
                       std::string(#call ": ") + ncclGetErrorString(halogen_status_));                \
  } while (0)

#define MPI_CHECK(call)                                                                               \
  do {                                                                                                \
    int halogen_status_ = (call);                                                                     \
    if (halogen_status_ != MPI_SUCCESS) {                                                             \
      char halogen_msg_[MPI_MAX_ERROR_STRING];                                                        \
      int halogen_len_ = 0;                                                                           \
      MPI_Error_string(halogen_status_, halogen_msg_, &halogen_len_);                                 \
      ::halogen::fatal(__FILE__, __LINE__, std::string(#call ": ") + std::string(halogen_msg_, halogen_len_)); \
    }                                                                                                 \
  } while (0)
