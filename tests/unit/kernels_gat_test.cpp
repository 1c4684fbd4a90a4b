// GAT's CPU ops (kernels/cpu/gat.cpp) against naive double references written from the contracts in
// kernels/ops.h ("GAT"): strided node views (the padding sentinel catches a kernel touching the gap), a CSR
// with empty rows, hubs and repeated columns, 5 heads (a full and a partial group of dropout words), sizes above
// the OpenMP threshold, thread-count independence, and the attention dropout's key (global ids only).
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/ops.h"
#include "kernels_test_util.h"

using namespace halogen;
using halogen::kernels::CsrView;
using halogen::kernels::EpilogueParams;
using halogen::kernels::test::HostCsr;
using halogen::kernels::test::HostMatrix;

namespace {

constexpr int64_t kHeads = 5, kWidth = 7, kC = kHeads * kWidth;

struct Graph {
  HostCsr a;                       // (rows, cols)
  std::vector<int64_t> t_indptr;   // (cols + 1)
  std::vector<int32_t> t_indices;  // (nnz) destination rows
  std::vector<int32_t> t_edge;     // (nnz) edge ids
  CsrView t() const {
    return CsrView{a.cols, a.rows, static_cast<int64_t>(t_indices.size()), t_indptr.data(), t_indices.data(),
                   nullptr, Device::cpu};
  }
};

Graph with_transpose(kernels::test::HostCsr a) {
  Graph g;
  g.a = std::move(a);
  const int64_t rows = g.a.rows, cols = g.a.cols;
  const int64_t nnz = static_cast<int64_t>(g.a.indices.size());
  g.t_indptr.assign(cols + 1, 0);
  for (int32_t j : g.a.indices) ++g.t_indptr[j + 1];
  for (int64_t j = 0; j < cols; ++j) g.t_indptr[j + 1] += g.t_indptr[j];
  g.t_indices.resize(nnz);
  g.t_edge.resize(nnz);
  std::vector<int64_t> next(g.t_indptr.begin(), g.t_indptr.end() - 1);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) {
      const int64_t slot = next[g.a.indices[e]]++;
      g.t_indices[slot] = static_cast<int32_t>(i);
      g.t_edge[slot] = static_cast<int32_t>(e);
    }
  return g;
}

Graph make_graph(std::mt19937_64& gen, int64_t rows, int64_t cols, int degree) {
  return with_transpose(kernels::test::random_csr(gen, rows, cols, degree));
}

HostMatrix random_matrix(std::mt19937_64& gen, int64_t rows, int64_t cols, int64_t padding = 3) {
  HostMatrix m(rows, cols, padding);
  m.randomize(gen, -2.0f, 2.0f);
  return m;
}

int64_t nnz_of(const Graph& g) { return static_cast<int64_t>(g.a.indices.size()); }
Span<const int32_t> edge_span(const Graph& g) { return {g.t_edge.data(), nnz_of(g), Device::cpu}; }

// |got - want| within `tolerance` * (1 + |want|) everywhere; returns the count of violations.
int64_t count_wrong(const HostMatrix& got, const std::vector<double>& want, double tolerance) {
  int64_t wrong = 0;
  for (int64_t r = 0; r < got.rows; ++r)
    for (int64_t c = 0; c < got.cols; ++c) {
      const double w = want[r * got.cols + c];
      wrong += !(std::abs(got(r, c) - w) <= tolerance * (1.0 + std::abs(w)));
    }
  return wrong;
}

}  // namespace

// Float sums of at most a few hundred terms of size ~4 against double: ~1e-5 relative is ample and far below
// any indexing error (which moves values by O(1)).
constexpr double kTolerance = 1e-5;

TEST(CpuGat, HeadScoresAndBackwardMatchReference) {
  std::mt19937_64 gen(1);
  const int64_t n = 1500;
  HostMatrix h = random_matrix(gen, n, kC), att = random_matrix(gen, kHeads, kWidth, 0);
  HostMatrix s(n, kHeads, 2);
  kernels::cpu::head_scores(h.cview(), att.cview(), s.view());
  std::vector<double> want(n * kHeads, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < kHeads; ++k)
      for (int64_t f = 0; f < kWidth; ++f) want[i * kHeads + k] += double(h(i, k * kWidth + f)) * att(k, f);
  EXPECT_EQ(count_wrong(s, want, kTolerance), 0);
  EXPECT_TRUE(s.padding_intact());

  HostMatrix grad_s = random_matrix(gen, n, kHeads), grad_h = random_matrix(gen, n, kC),
             grad_att = random_matrix(gen, kHeads, kWidth, 1);
  const HostMatrix grad_h_before = grad_h, grad_att_before = grad_att;
  kernels::cpu::head_scores_backward(h.cview(), att.cview(), grad_s.cview(), grad_h.view(), grad_att.view());
  std::vector<double> want_h(n * kC), want_att(kC);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < kC; ++c)
      want_h[i * kC + c] = grad_h_before(i, c) + double(grad_s(i, c / kWidth)) * att(c / kWidth, c % kWidth);
  for (int64_t c = 0; c < kC; ++c) {
    double sum = grad_att_before(c / kWidth, c % kWidth);
    for (int64_t i = 0; i < n; ++i) sum += double(grad_s(i, c / kWidth)) * h(i, c);
    want_att[c] = sum;
  }
  EXPECT_EQ(count_wrong(grad_h, want_h, kTolerance), 0);
  EXPECT_EQ(count_wrong(grad_att, want_att, kTolerance), 0);
  EXPECT_TRUE(grad_h.padding_intact() && grad_att.padding_intact());
}

TEST(CpuGat, EdgeScoresSoftmaxAndTheirBackwardMatchReference) {
  std::mt19937_64 gen(2);
  const int64_t rows = 900, cols = 1300;
  const Graph g = make_graph(gen, rows, cols, 6);
  const int64_t nnz = nnz_of(g);
  HostMatrix s_dst = random_matrix(gen, rows, kHeads), s_src = random_matrix(gen, cols, kHeads);
  s_src(5, 0) = 80.0f;  // exp(80) overflows float: only a max-subtracted softmax stays finite
  HostMatrix scores(nnz, kHeads);
  kernels::cpu::gat_edge_scores(g.a.view(false), s_dst.cview(), s_src.cview(), 0.2f, scores.view());
  std::vector<double> z(nnz * kHeads), alpha(nnz * kHeads);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t k = 0; k < kHeads; ++k) {
        const double v = double(s_dst(i, k)) + s_src(g.a.indices[e], k);
        z[e * kHeads + k] = v;
        alpha[e * kHeads + k] = v > 0 ? v : 0.2 * v;
      }
  EXPECT_EQ(count_wrong(scores, alpha, kTolerance), 0);
  kernels::cpu::edge_softmax(g.a.view(false), scores.view());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < kHeads; ++k) {
      double max = -1e300, sum = 0;
      for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) max = std::max(max, alpha[e * kHeads + k]);
      for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) sum += std::exp(alpha[e * kHeads + k] - max);
      for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
        alpha[e * kHeads + k] = std::exp(alpha[e * kHeads + k] - max) / sum;
    }
  EXPECT_EQ(count_wrong(scores, alpha, kTolerance), 0);

  // Backward: softmax, then the leaky relu's and the sums by destination and by source.
  HostMatrix grad = random_matrix(gen, nnz, kHeads, 0);
  std::vector<double> want(nnz * kHeads);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < kHeads; ++k) {
      double dot = 0;
      for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) dot += alpha[e * kHeads + k] * grad(e, k);
      for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
        want[e * kHeads + k] = alpha[e * kHeads + k] * (grad(e, k) - dot);
    }
  kernels::cpu::edge_softmax_backward(g.a.view(false), scores.cview(), grad.view());
  EXPECT_EQ(count_wrong(grad, want, kTolerance), 0);
  for (int64_t p = 0; p < nnz * kHeads; ++p) want[p] = grad.data[p] * (z[p] > 0 ? 1.0 : 0.2);
  HostMatrix grad_dst(rows, kHeads, 1), grad_src(cols, kHeads, 1);
  kernels::cpu::gat_edge_scores_backward(g.a.view(false), g.t(), edge_span(g), s_dst.cview(), s_src.cview(), 0.2f,
                                         grad.view(), grad_dst.view(), grad_src.view());
  EXPECT_EQ(count_wrong(grad, want, kTolerance), 0);
  std::vector<double> want_dst(rows * kHeads, 0.0), want_src(cols * kHeads, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t k = 0; k < kHeads; ++k) {
        want_dst[i * kHeads + k] += want[e * kHeads + k];
        want_src[g.a.indices[e] * kHeads + k] += want[e * kHeads + k];
      }
  EXPECT_EQ(count_wrong(grad_dst, want_dst, 1e-4), 0);  // hub rows: sums of ~250 terms
  EXPECT_EQ(count_wrong(grad_src, want_src, 1e-4), 0);
  EXPECT_TRUE(grad_dst.padding_intact() && grad_src.padding_intact());
}

TEST(CpuGat, WeightedSpmmTransposeAndEdgeDotMatchReference) {
  std::mt19937_64 gen(3);
  const int64_t rows = 800, cols = 1100;
  const Graph g = make_graph(gen, rows, cols, 5);
  const int64_t nnz = nnz_of(g);
  HostMatrix w = random_matrix(gen, nnz, kHeads, 0), x = random_matrix(gen, cols, kC), out(rows, kC, 2);
  kernels::cpu::weighted_spmm(g.a.view(false), w.cview(), x.cview(), out.view());
  std::vector<double> want(rows * kC, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t c = 0; c < kC; ++c) want[i * kC + c] += double(w(e, c / kWidth)) * x(g.a.indices[e], c);
  EXPECT_EQ(count_wrong(out, want, 1e-4), 0);
  EXPECT_TRUE(out.padding_intact());

  HostMatrix grad = random_matrix(gen, rows, kC), grad_x(cols, kC, 2);
  kernels::cpu::weighted_spmm_transpose(g.t(), edge_span(g), w.cview(), grad.cview(), grad_x.view());
  std::vector<double> want_t(cols * kC, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t c = 0; c < kC; ++c) want_t[g.a.indices[e] * kC + c] += double(w(e, c / kWidth)) * grad(i, c);
  EXPECT_EQ(count_wrong(grad_x, want_t, 1e-4), 0);
  // A row range of A^T (the halo sources alone) gives the same rows.
  const int64_t first = 700;
  CsrView tail = g.t();
  tail.rows = cols - first;
  tail.indptr += first;
  HostMatrix grad_tail(cols - first, kC, 1);
  kernels::cpu::weighted_spmm_transpose(tail, edge_span(g), w.cview(), grad.cview(), grad_tail.view());
  int64_t differ = 0;
  for (int64_t r = 0; r < tail.rows; ++r)
    for (int64_t c = 0; c < kC; ++c) differ += grad_tail(r, c) != grad_x(first + r, c);
  EXPECT_EQ(differ, 0);

  HostMatrix dots(nnz, kHeads);
  kernels::cpu::edge_dot(g.a.view(false), grad.cview(), x.cview(), dots.view());
  std::vector<double> want_dots(nnz * kHeads, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t c = 0; c < kC; ++c)
        want_dots[e * kHeads + c / kWidth] += double(grad(i, c)) * x(g.a.indices[e], c);
  EXPECT_EQ(count_wrong(dots, want_dots, kTolerance), 0);
}

TEST(CpuGat, OpsDoNotDependOnTheThreadCount) {
  std::mt19937_64 gen(4);
  const Graph g = make_graph(gen, 2000, 2000, 8);
  const int64_t nnz = nnz_of(g);
  HostMatrix w = random_matrix(gen, nnz, kHeads, 0), x = random_matrix(gen, 2000, kC);
  HostMatrix h = random_matrix(gen, 2000, kC), att = random_matrix(gen, kHeads, kWidth, 0),
             grad_s = random_matrix(gen, 2000, kHeads);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    HostMatrix out(2000, kC), grad_x(2000, kC), grad_h(2000, kC), grad_att(kHeads, kWidth);
    kernels::cpu::weighted_spmm(g.a.view(false), w.cview(), x.cview(), out.view());
    kernels::cpu::weighted_spmm_transpose(g.t(), edge_span(g), w.cview(), x.cview(), grad_x.view());
    std::fill(grad_h.data.begin(), grad_h.data.end(), 0.0f);
    std::fill(grad_att.data.begin(), grad_att.data.end(), 0.0f);
    kernels::cpu::head_scores_backward(h.cview(), att.cview(), grad_s.cview(), grad_h.view(), grad_att.view());
    return std::vector<std::vector<float>>{out.data, grad_x.data, grad_h.data, grad_att.data};
  };
  const auto one = run(1), three = run(3);
  omp_set_num_threads(omp_get_num_procs());
  EXPECT_EQ(one, three);
}

TEST(CpuGat, EdgeDropoutIsKeyedByGlobalIdsAndRedrawsTheSameMask) {
  std::mt19937_64 gen(5);
  const Graph g = make_graph(gen, 600, 900, 6);
  const int64_t nnz = nnz_of(g);
  std::vector<int64_t> row_gid(600), col_gid(900);
  for (int64_t i = 0; i < 600; ++i) row_gid[i] = 1000003 * i + 17;  // arbitrary, large, distinct
  for (int64_t j = 0; j < 900; ++j) col_gid[j] = (int64_t{1} << 40) + 7919 * j;
  const float p = 0.6f;
  const EpilogueParams params{false, p, 42, rng::stream_id(rng::kAttentionDropout, 3, 1)};
  HostMatrix in = random_matrix(gen, nnz, kHeads, 0), out(nnz, kHeads);
  const Span<const int64_t> rows{row_gid.data(), 600, Device::cpu}, cols{col_gid.data(), 900, Device::cpu};
  kernels::cpu::edge_dropout(g.a.view(false), rows, cols, params, in.cview(), out.view());
  int64_t wrong = 0, kept = 0;
  const float scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < 600; ++i)
    for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e)
      for (int64_t k = 0; k < kHeads; ++k) {
        const uint64_t key = rng::uniform_u64(params.seed, params.rng_stream, static_cast<uint64_t>(k / 4));
        const uint32_t word = rng::pair_bits(key, row_gid[i], col_gid[g.a.indices[e]]).v[k % 4];
        const bool keep = rng::word_uniform(word) >= p;
        kept += keep;
        wrong += out(e, k) != (keep ? in(e, k) * scale : 0.0f);
      }
  EXPECT_EQ(wrong, 0);
  // Keep rate 1 - p = 0.4 over ~18000 draws: standard deviation ~0.004, so +-0.03 is a > 7 sigma bound.
  EXPECT_NEAR(static_cast<double>(kept) / (nnz * kHeads), 1.0 - p, 0.03);
  // In place on a gradient: the same mask (what the backward relies on).
  HostMatrix again = in;
  kernels::cpu::edge_dropout(g.a.view(false), rows, cols, params, again.cview(), again.view());
  EXPECT_EQ(again.data, out.data);
  // p = 0: a copy.
  const EpilogueParams off{false, 0.0f, 42, params.rng_stream};
  kernels::cpu::edge_dropout(g.a.view(false), rows, cols, off, in.cview(), out.view());
  EXPECT_EQ(out.data, in.data);
}

// The fused attention (gat_attention, gat_attention_backward) against a naive double reference of the unfused
// chain (scores, softmax, edge_dropout's mask, weighted SpMM, and their backward), with attention dropout on and
// off. The graph has a row with a single edge (a vertex with only its self-loop), empty rows, hubs of 241
// edges, and two 200-edge rows whose scores rise (the running max grows in every chunk of 64: the online
// softmax rescales its sum and accumulator) or fall over a range of 80 (exp underflows at the far end).
TEST(CpuGat, FusedAttentionMatchesNaiveReference) {
  std::mt19937_64 gen(7);
  const int64_t rows = 700, cols = 1000;
  kernels::test::HostCsr a;
  a.rows = rows;
  a.cols = cols;
  a.indices.push_back(0);  // row 0: its self-loop only
  a.indptr.push_back(1);
  for (int32_t j = 100; j < 300; ++j) a.indices.push_back(j);  // row 1: rising scores
  a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  for (int32_t j = 300; j < 500; ++j) a.indices.push_back(j);  // row 2: falling scores
  a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  const kernels::test::HostCsr rest = kernels::test::random_csr(gen, rows - 3, cols, 6);
  for (int64_t r = 0; r < rest.rows; ++r) {
    for (int64_t e = rest.indptr[r]; e < rest.indptr[r + 1]; ++e) a.indices.push_back(rest.indices[e]);
    a.indptr.push_back(static_cast<int64_t>(a.indices.size()));
  }
  const Graph g = with_transpose(a);
  const int64_t nnz = nnz_of(g);
  HostMatrix s_dst = random_matrix(gen, rows, kHeads), s_src = random_matrix(gen, cols, kHeads);
  for (int64_t k = 0; k < kHeads; ++k)
    for (int32_t j = 0; j < 200; ++j) {
      s_src(100 + j, k) = -40.0f + 0.4f * static_cast<float>(j) + 0.1f * static_cast<float>(k);
      s_src(300 + j, k) = 40.0f - 0.4f * static_cast<float>(j);
    }
  const HostMatrix x = random_matrix(gen, cols, kC), grad_out = random_matrix(gen, rows, kC);
  std::vector<int64_t> row_gid(rows), col_gid(cols);
  for (int64_t i = 0; i < rows; ++i) row_gid[i] = 1000003 * i + 17;
  for (int64_t j = 0; j < cols; ++j) col_gid[j] = (int64_t{1} << 40) + 7919 * j;
  const Span<const int64_t> row_ids{row_gid.data(), rows, Device::cpu}, col_ids{col_gid.data(), cols, Device::cpu};
  const float slope = 0.2f;
  for (const float p : {0.5f, 0.0f}) {
    SCOPED_TRACE(p);
    const EpilogueParams params{false, p, 42, rng::stream_id(rng::kAttentionDropout, 3, 1)};
    // Reference, in double from the same float scores d + s.
    std::vector<double> alpha(nnz * kHeads), factor(nnz * kHeads), lk(nnz * kHeads);
    std::vector<double> want_out(rows * kC, 0.0), want_m(rows * kHeads), want_inv(rows * kHeads);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < kHeads; ++k) {
        double max = -INFINITY, sum = 0.0;
        for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) {
          const int32_t j = g.a.indices[e];
          const double z = static_cast<float>(s_dst(i, k) + s_src(j, k));
          lk[e * kHeads + k] = z > 0 ? 1.0 : slope;
          alpha[e * kHeads + k] = z > 0 ? z : slope * z;
          max = std::max(max, alpha[e * kHeads + k]);
          bool keep = true;
          if (p > 0.0f) {
            const uint64_t key = rng::uniform_u64(params.seed, params.rng_stream, static_cast<uint64_t>(k / 4));
            keep = rng::word_uniform(rng::pair_bits(key, row_gid[i], col_gid[j]).v[k % 4]) >= p;
          }
          factor[e * kHeads + k] = keep ? 1.0 / (1.0 - p) : 0.0;
        }
        for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) sum += std::exp(alpha[e * kHeads + k] - max);
        for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) {
          alpha[e * kHeads + k] = std::exp(alpha[e * kHeads + k] - max) / sum;
          for (int64_t f = 0; f < kWidth; ++f)
            want_out[i * kC + k * kWidth + f] +=
                alpha[e * kHeads + k] * factor[e * kHeads + k] * x(g.a.indices[e], k * kWidth + f);
        }
        want_m[i * kHeads + k] = max;
        want_inv[i * kHeads + k] = sum > 0 ? 1.0 / sum : 0.0;
      }
    std::vector<double> want_dst(rows * kHeads, 0.0), want_src(cols * kHeads, 0.0), want_x(cols * kC, 0.0),
        want_dot(rows * kHeads, 0.0);
    std::vector<double> td(nnz * kHeads);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < kHeads; ++k) {
        for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) {
          const int32_t j = g.a.indices[e];
          double t = 0.0;
          for (int64_t f = 0; f < kWidth; ++f) {
            t += double(grad_out(i, k * kWidth + f)) * x(j, k * kWidth + f);
            want_x[j * kC + k * kWidth + f] +=
                alpha[e * kHeads + k] * factor[e * kHeads + k] * grad_out(i, k * kWidth + f);
          }
          td[e * kHeads + k] = t * factor[e * kHeads + k];
          want_dot[i * kHeads + k] += alpha[e * kHeads + k] * td[e * kHeads + k];
        }
        for (int64_t e = g.a.indptr[i]; e < g.a.indptr[i + 1]; ++e) {
          const double dz =
              lk[e * kHeads + k] * alpha[e * kHeads + k] * (td[e * kHeads + k] - want_dot[i * kHeads + k]);
          want_dst[i * kHeads + k] += dz;
          want_src[g.a.indices[e] * kHeads + k] += dz;
        }
      }
    auto run = [&](int threads) {
      omp_set_num_threads(threads);
      HostMatrix out(rows, kC, 2), stats(rows, 2 * kHeads, 1), row_dot(rows, kHeads, 1), grad_x(cols, kC, 2),
          grad_dst(rows, kHeads, 1), grad_src(cols, kHeads, 1);
      kernels::cpu::gat_attention(g.a.view(false), row_ids, col_ids, params, s_dst.cview(), s_src.cview(), slope,
                                  x.cview(), out.view(), stats.view());
      kernels::cpu::gat_attention_backward(g.a.view(false), g.t(), row_ids, col_ids, params, s_dst.cview(),
                                           s_src.cview(), slope, x.cview(), stats.cview(), grad_out.cview(),
                                           row_dot.view(), grad_x.view(), grad_dst.view(), grad_src.view());
      return std::vector<HostMatrix>{out, stats, row_dot, grad_x, grad_dst, grad_src};
    };
    const std::vector<HostMatrix> got = run(3);
    const HostMatrix &out = got[0], &stats = got[1];
    EXPECT_EQ(count_wrong(out, want_out, kTolerance), 0);
    int64_t wrong_stats = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < kHeads; ++k) {
        const double m = want_m[i * kHeads + k], inv = want_inv[i * kHeads + k];
        wrong_stats += g.a.indptr[i] == g.a.indptr[i + 1] ? !(stats(i, k) == -INFINITY && stats(i, kHeads + k) == 0)
                                                           : !(std::abs(stats(i, k) - m) <= 1e-6 * (1 + std::abs(m)) &&
                                                               std::abs(stats(i, kHeads + k) - inv) <= 1e-5 * inv);
      }
    EXPECT_EQ(wrong_stats, 0);
    EXPECT_EQ(count_wrong(got[2], want_dot, kTolerance), 0);
    EXPECT_EQ(count_wrong(got[3], want_x, 1e-4), 0);  // hub columns: sums of many terms
    EXPECT_EQ(count_wrong(got[4], want_dst, 1e-4), 0);
    EXPECT_EQ(count_wrong(got[5], want_src, 1e-4), 0);
    for (const HostMatrix& m : got) EXPECT_TRUE(m.padding_intact());
    // Row 1 (rising scores) really spans the range: its first edges underflow, its last carries weight.
    EXPECT_EQ(stats(1, 0), s_dst(1, 0) + s_src(299, 0));
    EXPECT_LT(alpha[g.a.indptr[1] * kHeads], 1e-15);  // leaky(-40 + d) - 40: exp(-48)
    // The same bits on 1 thread (the row-parallel passes do not depend on the thread count).
    const std::vector<HostMatrix> one = run(1);
    for (size_t t = 0; t < got.size(); ++t) EXPECT_EQ(one[t].data, got[t].data) << "output " << t;
    omp_set_num_threads(omp_get_num_procs());
  }
}

// The fused attention's mask is edge_dropout's, and its forward equals the unfused chain (scores, softmax,
// edge_dropout, weighted_spmm) to float rounding; its backward equals the unfused backward chain bit for bit on
// rows of at most 64 edges (the same operations in the same order).
TEST(CpuGat, FusedAttentionMatchesTheUnfusedOps) {
  std::mt19937_64 gen(8);
  const int64_t rows = 500, cols = 800;
  kernels::test::HostCsr capped;  // rows of at most 64 edges (one chunk): no rescaling, the unfused order
  {
    const kernels::test::HostCsr full = kernels::test::random_csr(gen, rows, cols, 5);
    capped.rows = rows;
    capped.cols = cols;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t e = full.indptr[i]; e < std::min(full.indptr[i + 1], full.indptr[i] + 64); ++e)
        capped.indices.push_back(full.indices[e]);
      capped.indptr.push_back(static_cast<int64_t>(capped.indices.size()));
    }
  }
  const Graph g = with_transpose(capped);
  const int64_t nnz = nnz_of(g);
  const HostMatrix s_dst = random_matrix(gen, rows, kHeads), s_src = random_matrix(gen, cols, kHeads),
                   x = random_matrix(gen, cols, kC), grad_out = random_matrix(gen, rows, kC);
  std::vector<int64_t> row_gid(rows), col_gid(cols);
  for (int64_t i = 0; i < rows; ++i) row_gid[i] = 31 * i + 5;
  for (int64_t j = 0; j < cols; ++j) col_gid[j] = 77 * j + 1;
  const Span<const int64_t> row_ids{row_gid.data(), rows, Device::cpu}, col_ids{col_gid.data(), cols, Device::cpu};
  const EpilogueParams params{false, 0.6f, 9, rng::stream_id(rng::kAttentionDropout, 1, 0)};
  const CsrView a = g.a.view(false);
  // Unfused.
  HostMatrix alpha(nnz, kHeads), weights(nnz, kHeads), out(rows, kC), work(nnz, kHeads), grad_x(cols, kC),
      grad_dst(rows, kHeads), grad_src(cols, kHeads);
  kernels::cpu::gat_edge_scores(a, s_dst.cview(), s_src.cview(), 0.2f, alpha.view());
  kernels::cpu::edge_softmax(a, alpha.view());
  kernels::cpu::edge_dropout(a, row_ids, col_ids, params, alpha.cview(), weights.view());
  kernels::cpu::weighted_spmm(a, weights.cview(), x.cview(), out.view());
  kernels::cpu::weighted_spmm_transpose(g.t(), edge_span(g), weights.cview(), grad_out.cview(), grad_x.view());
  kernels::cpu::edge_dot(a, grad_out.cview(), x.cview(), work.view());
  kernels::cpu::edge_dropout(a, row_ids, col_ids, params, work.cview(), work.view());
  kernels::cpu::edge_softmax_backward(a, alpha.cview(), work.view());
  kernels::cpu::gat_edge_scores_backward(a, g.t(), edge_span(g), s_dst.cview(), s_src.cview(), 0.2f, work.view(),
                                         grad_dst.view(), grad_src.view());
  // Fused.
  HostMatrix f_out(rows, kC), stats(rows, 2 * kHeads), row_dot(rows, kHeads), f_grad_x(cols, kC),
      f_grad_dst(rows, kHeads), f_grad_src(cols, kHeads);
  kernels::cpu::gat_attention(a, row_ids, col_ids, params, s_dst.cview(), s_src.cview(), 0.2f, x.cview(),
                              f_out.view(), stats.view());
  kernels::cpu::gat_attention_backward(a, g.t(), row_ids, col_ids, params, s_dst.cview(), s_src.cview(), 0.2f,
                                       x.cview(), stats.cview(), grad_out.cview(), row_dot.view(), f_grad_x.view(),
                                       f_grad_dst.view(), f_grad_src.view());
  const std::vector<double> want_out(out.data.begin(), out.data.end());
  EXPECT_EQ(count_wrong(f_out, want_out, 1e-6), 0);
  EXPECT_EQ(f_grad_x.data, grad_x.data);
  EXPECT_EQ(f_grad_dst.data, grad_dst.data);
  EXPECT_EQ(f_grad_src.data, grad_src.data);
}

TEST(CpuGat, EluDropoutMaskIsTheDerivativeTimesTheFactor) {
  std::mt19937_64 gen(6);
  const int64_t n = 3000, f = 13;
  HostMatrix h = random_matrix(gen, n, f), mask(n, f, 1);
  const HostMatrix before = h;
  std::vector<int64_t> gid(n);
  for (int64_t i = 0; i < n; ++i) gid[i] = 5 * i + 2;
  const EpilogueParams params{false, 0.5f, 9, rng::stream_id(rng::kDropout, 2, 1)};
  kernels::cpu::elu_dropout(h.view(), Span<const int64_t>{gid.data(), n, Device::cpu}, params, mask.view());
  int64_t wrong = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < f; ++c) {
      const float x = before(r, c);
      const bool keep = rng::dropout_keep(params.seed, params.rng_stream, gid[r] * f + c, rng::dropout_threshold(0.5f));
      const float factor = keep ? 2.0f : 0.0f;
      const double y = x > 0 ? x : std::expm1(double(x)), slope = x > 0 ? 1.0 : std::exp(double(x));
      wrong += std::abs(h(r, c) - y * factor) > 1e-6 || std::abs(mask(r, c) - slope * factor) > 1e-6;
    }
  EXPECT_EQ(wrong, 0);  // expm1/exp in float against double: within 1e-6 absolute for |x| <= 2
  EXPECT_TRUE(h.padding_intact() && mask.padding_intact());
}
