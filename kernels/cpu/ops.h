#pragma once
// The CPU backend (OpenMP + OpenBLAS): halogen::kernels::cpu::<op> with exactly the signatures and contracts
// of kernels/ops.h, which documents them; kernels/dispatch.cpp routes kernels::<op> here for host views.
// These are also the reference that the CUDA kernels are tested against.
//
// CPU specifics:
// - Every view must have device == Device::cpu (HALOGEN_ASSERT otherwise).
// - Threads: each op uses omp_get_max_threads() threads (the trainer sets them with omp_set_num_threads).
//   gemm also sets OpenBLAS's thread count to omp_get_max_threads() before calling it.
// - Determinism: no op uses atomics on floats; every reduction (bias_backward, softmax_cross_entropy's sum,
//   sum_squares) sums fixed blocks of rows in a fixed order, so results are bitwise identical for any thread
//   count. spmm computes each output row wholly in one thread, in index order. Temporal cells: elementwise ops
//   have no reductions; pair_dot_backward sums each row's terms in pair order (the a-side term of a pair
//   before its b-side term) whatever the thread count; bce_with_logits and squared_error sum fixed blocks in
//   order. sigmoid/tanh use glibc's vector exp/tanh (kernels/cpu/gate_math.cpp, -ffast-math), a few ulp from
//   std::exp/std::tanh.
// - `stream` is ignored.
// - Extensions of the common contract (the CUDA backend should accept the same):
//   * bias_relu_dropout / dropout: `mask` may be empty (rows == 0) when nothing is to be recorded
//     (inference); `row_gid` may be empty when params.dropout == 0.
//   * dropout: `out` may be the same memory as `x` (in place).
//   * softmax_cross_entropy: `rows` must not repeat a row (each row's gradient is written once).
#include "kernels/ops.h"

namespace halogen::kernels::cpu {

// The ops of kernels/op_list.h (contracts in kernels/ops.h).
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) \
  return_type name(HALOGEN_UNPAREN parameters, Stream stream = nullptr);
#include "kernels/op_list.h"
#undef HALOGEN_OP
void release_sparse_cache();

// The SpMM kernel is compiled for AVX2 and for baseline x86-64 and picks AVX2 when the CPU has it. Both give
// bitwise identical results. For tests and benchmarks: forbid (false) or allow AVX2; returns the old setting.
bool set_spmm_avx2_allowed(bool allowed);
// "avx2" or "baseline x86-64 (sse2)": the variant spmm uses now.
const char* spmm_instruction_set();

// gemm_bf16 uses AVX512-BF16 dot products where the CPU has them (and HALOGEN_CPU_BF16=fallback is not set),
// else widens blocks to FP32 for the FP32 BLAS. For tests and benchmarks: forbid (false) or allow the
// AVX512-BF16 kernel; returns the old setting. The two differ only in the order of FP32 additions.
bool set_gemm_bf16_avx512_allowed(bool allowed);
// "avx512bf16" or "fp32 blas (widened)": the variant gemm_bf16 uses now.
const char* gemm_bf16_instruction_set();

// Dropout draws the words of rng::dropout_word with AVX-512, else AVX2, else one Philox call at a time. For
// tests: words[4 k + j] = word j of rng::bits(seed, stream, first_counter + k), k < counters, drawn with
// `instruction_set` (0 = one call at a time, 1 = AVX2, 2 = AVX-512); false (nothing written) where the CPU
// lacks it.  words: (4 counters)
bool draw_dropout_words(uint64_t seed, uint64_t stream, uint64_t first_counter, int64_t counters,
                        int instruction_set, uint32_t* words);

}  // namespace halogen::kernels::cpu
