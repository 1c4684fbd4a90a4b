// GPU parity of GAT's ops (kernels/cuda/gat.cu) against halogen::kernels::cpu on the same inputs: a random CSR
// with empty rows (parity_util.h), its transpose with edge ids, 5 heads of width 7 in strided node views. The
// GPU does each element's float operations in the CPU's order (kernels/cuda/gat.cu), so most ops agree bit for
// bit; exp/expm1 (device vs host libm, a few ulp) and grad_att (double block sums) get a tolerance.
#include <cmath>
#include <vector>

#include "gpu_test_util.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "parity_util.h"

using namespace halogen;
using namespace halogen::gpu_test;

namespace {

constexpr int64_t kHeads = 5, kWidth = 7, kC = kHeads * kWidth, kRows = 700, kCols = 1000;

struct Transpose {
  std::vector<int64_t> indptr;
  std::vector<int32_t> indices, edge;
};

Transpose transpose_of(const HostCsr& a) {
  Transpose t;
  const int64_t nnz = static_cast<int64_t>(a.indices.size());
  t.indptr.assign(a.cols + 1, 0);
  for (int32_t j : a.indices) ++t.indptr[j + 1];
  for (int64_t j = 0; j < a.cols; ++j) t.indptr[j + 1] += t.indptr[j];
  t.indices.resize(nnz);
  t.edge.resize(nnz);
  std::vector<int64_t> next(t.indptr.begin(), t.indptr.end() - 1);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.indptr[i]; e < a.indptr[i + 1]; ++e) {
      const int64_t slot = next[a.indices[e]]++;
      t.indices[slot] = static_cast<int32_t>(i);
      t.edge[slot] = static_cast<int32_t>(e);
    }
  return t;
}

HostMatrix uniform_matrix(int64_t rows, int64_t cols, int64_t stride, uint64_t seed) {
  return HostMatrix{rows, cols, stride, uniform_values(rows * stride, seed, -2.0f, 2.0f)};
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tolerance,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    wrong += !(got[i] == want[i] || std::abs(got[i] - want[i]) <= tolerance * (1.0 + std::abs(want[i])));  // == : inf
  EXPECT_EQ(wrong, 0) << what;
}

struct Fixture {
  HostCsr a = random_csr(kRows, kCols, 12, 9, 21);
  Transpose t = transpose_of(a);
  int64_t nnz = static_cast<int64_t>(a.indices.size());
  DeviceCsr a_device{a};
  Buffer<int64_t> t_indptr = to_device(t.indptr);
  Buffer<int32_t> t_indices = to_device(t.indices), t_edge = to_device(t.edge);
  kernels::CsrView a_cpu() const { return a.view(true); }
  kernels::CsrView a_gpu() const { return a_device.view(true); }
  kernels::CsrView t_cpu() const {
    return kernels::CsrView{kCols, kRows, nnz, t.indptr.data(), t.indices.data(), nullptr, Device::cpu};
  }
  kernels::CsrView t_gpu() const {
    return kernels::CsrView{kCols, kRows, nnz, t_indptr.data(), t_indices.data(), nullptr, Device::cuda};
  }
  Span<const int32_t> edge_cpu() const { return {t.edge.data(), nnz, Device::cpu}; }
  Span<const int32_t> edge_gpu() const { return {t_edge.data(), nnz, Device::cuda}; }
};

}  // namespace

TEST(GpuGat, ScoresSoftmaxAndBackwardMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  Fixture fx;
  HostMatrix s_dst = uniform_matrix(kRows, kHeads, kHeads + 1, 1), s_src = uniform_matrix(kCols, kHeads, kHeads, 2);
  DeviceMatrix s_dst_d(s_dst), s_src_d(s_src);
  HostMatrix scores{fx.nnz, kHeads, kHeads, std::vector<float>(fx.nnz * kHeads)};
  DeviceMatrix scores_d(scores);
  kernels::cpu::gat_edge_scores(fx.a_cpu(), s_dst.view(), s_src.view(), 0.2f, scores.view());
  kernels::cuda::gat_edge_scores(fx.a_gpu(), s_dst_d.view(), s_src_d.view(), 0.2f, scores_d.view());
  EXPECT_EQ(scores_d.host(), scores.data);  // one add and one multiply per element
  kernels::cpu::edge_softmax(fx.a_cpu(), scores.view());
  kernels::cuda::edge_softmax(fx.a_gpu(), scores_d.view());
  expect_close(scores_d.host(), scores.data, 1e-6, "edge_softmax");  // expf vs std::exp: a few ulp
  HostMatrix grad = uniform_matrix(fx.nnz, kHeads, kHeads, 3);
  DeviceMatrix grad_d(grad);
  DeviceMatrix alpha_d(scores);  // the CPU's alpha on both sides: the backward compared alone
  kernels::cpu::edge_softmax_backward(fx.a_cpu(), scores.view(), grad.view());
  kernels::cuda::edge_softmax_backward(fx.a_gpu(), alpha_d.view(), grad_d.view());
  EXPECT_EQ(grad_d.host(), grad.data);
  HostMatrix grad_dst{kRows, kHeads, kHeads, std::vector<float>(kRows * kHeads)},
      grad_src{kCols, kHeads, kHeads + 2, std::vector<float>(kCols * (kHeads + 2))};
  DeviceMatrix grad_dst_d(grad_dst), grad_src_d(grad_src);
  kernels::cpu::gat_edge_scores_backward(fx.a_cpu(), fx.t_cpu(), fx.edge_cpu(), s_dst.view(), s_src.view(), 0.2f,
                                         grad.view(), grad_dst.view(), grad_src.view());
  kernels::cuda::gat_edge_scores_backward(fx.a_gpu(), fx.t_gpu(), fx.edge_gpu(), s_dst_d.view(), s_src_d.view(),
                                          0.2f, grad_d.view(), grad_dst_d.view(), grad_src_d.view());
  EXPECT_EQ(grad_d.host(), grad.data);
  EXPECT_EQ(grad_dst_d.host(), grad_dst.data);
  EXPECT_EQ(grad_src_d.host(), grad_src.data);
}

TEST(GpuGat, WeightedSpmmTransposeEdgeDotAndHeadScoresMatchCpu) {
  HALOGEN_REQUIRE_GPU();
  Fixture fx;
  HostMatrix w = uniform_matrix(fx.nnz, kHeads, kHeads, 4), x = uniform_matrix(kCols, kC, kC + 3, 5),
             g = uniform_matrix(kRows, kC, kC + 1, 6);
  DeviceMatrix w_d(w), x_d(x), g_d(g);
  HostMatrix out{kRows, kC, kC + 2, std::vector<float>(kRows * (kC + 2), 7.0f)};
  DeviceMatrix out_d(out);
  kernels::cpu::weighted_spmm(fx.a_cpu(), w.view(), x.view(), out.view());
  kernels::cuda::weighted_spmm(fx.a_gpu(), w_d.view(), x_d.view(), out_d.view());
  EXPECT_EQ(out_d.host(), out.data);  // padding (7.0) included
  HostMatrix back{kCols, kC, kC, std::vector<float>(kCols * kC)};
  DeviceMatrix back_d(back);
  kernels::cpu::weighted_spmm_transpose(fx.t_cpu(), fx.edge_cpu(), w.view(), g.view(), back.view());
  kernels::cuda::weighted_spmm_transpose(fx.t_gpu(), fx.edge_gpu(), w_d.view(), g_d.view(), back_d.view());
  EXPECT_EQ(back_d.host(), back.data);
  HostMatrix dots{fx.nnz, kHeads, kHeads, std::vector<float>(fx.nnz * kHeads)};
  DeviceMatrix dots_d(dots);
  kernels::cpu::edge_dot(fx.a_cpu(), g.view(), x.view(), dots.view());
  kernels::cuda::edge_dot(fx.a_gpu(), g_d.view(), x_d.view(), dots_d.view());
  expect_close(dots_d.host(), dots.data, 1e-6, "edge_dot");  // the CPU's simd reduction reorders the 7 terms

  HostMatrix att = uniform_matrix(kHeads, kWidth, kWidth, 7), s{kRows, kHeads, kHeads, std::vector<float>(kRows * kHeads)};
  DeviceMatrix att_d(att), s_d(s);
  kernels::cpu::head_scores(g.view(), att.view(), s.view());
  kernels::cuda::head_scores(g_d.view(), att_d.view(), s_d.view());
  expect_close(s_d.host(), s.data, 1e-6, "head_scores");
  HostMatrix grad_h = uniform_matrix(kRows, kC, kC, 8), grad_att = uniform_matrix(kHeads, kWidth, kWidth, 9);
  DeviceMatrix grad_h_d(grad_h), grad_att_d(grad_att);
  kernels::cpu::head_scores_backward(g.view(), att.view(), s.view(), grad_h.view(), grad_att.view());
  kernels::cuda::head_scores_backward(g_d.view(), att_d.view(), s_d.view(), grad_h_d.view(), grad_att_d.view());
  expect_close(grad_h_d.host(), grad_h.data, 1e-6, "head_scores_backward grad_h");
  expect_close(grad_att_d.host(), grad_att.data, 1e-5, "head_scores_backward grad_att");  // 700-term sums
}

TEST(GpuGat, DropoutsDrawTheCpuMasks) {
  HALOGEN_REQUIRE_GPU();
  Fixture fx;
  std::vector<int64_t> row_gid(kRows), col_gid(kCols);
  for (int64_t i = 0; i < kRows; ++i) row_gid[i] = 3 * i + 1;
  for (int64_t j = 0; j < kCols; ++j) col_gid[j] = (int64_t{1} << 35) + j;
  Buffer<int64_t> row_d = to_device(row_gid), col_d = to_device(col_gid);
  const kernels::EpilogueParams params{false, 0.6f, 5, rng::stream_id(rng::kAttentionDropout, 1, 0)};
  HostMatrix in = uniform_matrix(fx.nnz, kHeads, kHeads, 10), out{fx.nnz, kHeads, kHeads, std::vector<float>(fx.nnz * kHeads)};
  DeviceMatrix in_d(in), out_d(out);
  kernels::cpu::edge_dropout(fx.a_cpu(), {row_gid.data(), kRows, Device::cpu}, {col_gid.data(), kCols, Device::cpu},
                             params, in.view(), out.view());
  kernels::cuda::edge_dropout(fx.a_gpu(), {row_d.data(), kRows, Device::cuda}, {col_d.data(), kCols, Device::cuda},
                              params, in_d.view(), out_d.view());
  EXPECT_EQ(out_d.host(), out.data);
  HostMatrix h = uniform_matrix(kRows, 9, 11, 11), mask{kRows, 9, 9, std::vector<float>(kRows * 9)};
  DeviceMatrix h_d(h), mask_d(mask);
  kernels::cpu::elu_dropout(h.view(), {row_gid.data(), kRows, Device::cpu}, params, mask.view());
  kernels::cuda::elu_dropout(h_d.view(), {row_d.data(), kRows, Device::cuda}, params, mask_d.view());
  expect_close(h_d.host(), h.data, 1e-6, "elu_dropout");  // expm1f vs std::expm1
  expect_close(mask_d.host(), mask.data, 1e-6, "elu_dropout mask");
}

// The fused attention: the GPU's online softmax rescales per edge where the CPU's rescales per chunk of 64, and
// expf differs from std::exp by a few ulp, so a tolerance (far below an indexing or mask error); the masks are
// the same bits (edge_dropout's keys).
TEST(GpuGat, FusedAttentionMatchesCpu) {
  HALOGEN_REQUIRE_GPU();
  Fixture fx;
  std::vector<int64_t> row_gid(kRows), col_gid(kCols);
  for (int64_t i = 0; i < kRows; ++i) row_gid[i] = 3 * i + 1;
  for (int64_t j = 0; j < kCols; ++j) col_gid[j] = (int64_t{1} << 35) + j;
  Buffer<int64_t> row_d = to_device(row_gid), col_d = to_device(col_gid);
  const Span<const int64_t> rows_cpu{row_gid.data(), kRows, Device::cpu}, cols_cpu{col_gid.data(), kCols, Device::cpu};
  const Span<const int64_t> rows_gpu{row_d.data(), kRows, Device::cuda}, cols_gpu{col_d.data(), kCols, Device::cuda};
  HostMatrix s_dst = uniform_matrix(kRows, kHeads, kHeads + 1, 21), s_src = uniform_matrix(kCols, kHeads, kHeads, 22),
             x = uniform_matrix(kCols, kC, kC + 3, 23), g = uniform_matrix(kRows, kC, kC + 1, 24);
  DeviceMatrix s_dst_d(s_dst), s_src_d(s_src), x_d(x), g_d(g);
  for (const float p : {0.6f, 0.0f}) {
    SCOPED_TRACE(p);
    const kernels::EpilogueParams params{false, p, 5, rng::stream_id(rng::kAttentionDropout, 2, 1)};
    HostMatrix out{kRows, kC, kC, std::vector<float>(kRows * kC)}, stats{kRows, 2 * kHeads, 2 * kHeads,
                                                                          std::vector<float>(kRows * 2 * kHeads)};
    HostMatrix row_dot{kRows, kHeads, kHeads, std::vector<float>(kRows * kHeads)},
        grad_dst{kRows, kHeads, kHeads, std::vector<float>(kRows * kHeads)},
        grad_x{kCols, kC, kC, std::vector<float>(kCols * kC)},
        grad_src{kCols, kHeads, kHeads, std::vector<float>(kCols * kHeads)};
    DeviceMatrix out_d(out), stats_d(stats), row_dot_d(row_dot), grad_dst_d(grad_dst), grad_x_d(grad_x),
        grad_src_d(grad_src);
    kernels::cpu::gat_attention(fx.a_cpu(), rows_cpu, cols_cpu, params, s_dst.view(), s_src.view(), 0.2f, x.view(),
                                out.view(), stats.view());
    kernels::cuda::gat_attention(fx.a_gpu(), rows_gpu, cols_gpu, params, s_dst_d.view(), s_src_d.view(), 0.2f,
                                 x_d.view(), out_d.view(), stats_d.view());
    expect_close(out_d.host(), out.data, 1e-5, "gat_attention out");
    expect_close(stats_d.host(), stats.data, 1e-5, "gat_attention stats");
    // The backward from the CPU's statistics on both sides: compared alone.
    DeviceMatrix cpu_stats_d(stats);
    kernels::cpu::gat_attention_backward(fx.a_cpu(), fx.t_cpu(), rows_cpu, cols_cpu, params, s_dst.view(),
                                         s_src.view(), 0.2f, x.view(), stats.view(), g.view(), row_dot.view(),
                                         grad_x.view(), grad_dst.view(), grad_src.view());
    kernels::cuda::gat_attention_backward(fx.a_gpu(), fx.t_gpu(), rows_gpu, cols_gpu, params, s_dst_d.view(),
                                          s_src_d.view(), 0.2f, x_d.view(), cpu_stats_d.view(), g_d.view(),
                                          row_dot_d.view(), grad_x_d.view(), grad_dst_d.view(), grad_src_d.view());
    expect_close(row_dot_d.host(), row_dot.data, 1e-5, "gat_attention_backward row_dot");
    expect_close(grad_x_d.host(), grad_x.data, 1e-4, "gat_attention_backward grad_x");
    expect_close(grad_dst_d.host(), grad_dst.data, 1e-4, "gat_attention_backward grad_s_dst");
    expect_close(grad_src_d.host(), grad_src.data, 1e-4, "gat_attention_backward grad_s_src");
  }
}
