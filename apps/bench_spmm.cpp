// `halogen bench spmm`: the CPU CSR SpMM kernel (kernels::spmm on host views) against the machine's memory
// bandwidth, measured in the same run with the same threads by STREAM-style copy and triad. nccl-tests style
// table:
//   width  nnz  median(ms)  best(ms)  GB/s  GB/s(min)  copy  %copy  triad  %triad  #wrong
// The matrix is generated (--rows, --avg-degree, --graph), or (--partition DIR --part p) a shard's local CSR:
// its owned rows by owned + halo columns, in the shard's vertex order (`partition --vertex-order`), with its
// weights or generated values; X then has owned + halo rows.
// Bytes per call (accumulate off):
//   indptr 8 (rows + 1) + indices 4 nnz + values 4 nnz (0 for --pattern; 8 rows for --scaled, a row and a
//   column factor instead of stored values, graph/local_graph.h's gcn form) + X gathered + Y written 4 rows
//   width, X gathered = 4 nnz width for GB/s: every nonzero reads its row of X from memory (the upper bound,
//   and the real traffic when X is much larger than the last-level cache and columns are random), and = 4
//   (distinct columns) width for GB/s(min): each needed row of X read once (the compulsory traffic).
// Both GB/s use the best of --iters calls, and the copy (c = a, 2 x --triad-mib MiB of doubles) and the triad
// (a = b + s c on doubles, 3 x --triad-mib MiB) are each the best of 10 runs measured just before each width,
// as STREAM reports them; %copy = GB/s / copy, %triad = GB/s / triad. A gather is a copy (read a row of X,
// write a row of Y) so copy is the reference; the last line "# spmm_copy_bw_share S" (0-1) gives the best
// GB/s of the sweep / its width's copy GB/s. On a shared
// machine the per-width triad keeps the ratio meaningful when the load changes. #wrong counts elements of
// --check-rows sampled rows that differ from a double-precision reference by more than the float summation
// bound; the command exits 1 if any is wrong.
// --precision bf16: X is stored in BF16 (its values rounded to BF16 first, so the same reference check applies)
// and multiplied by kernels::spmm_bf16, which widens the gathered rows and sums in FP32: X's bytes are 2 per
// element in both GB/s columns.
//
// --device cuda: the same matrix and data on the GPU (cuSPARSE through kernels::spmm), each call timed with
// CUDA events; the reference is then the device-to-device copy bandwidth (cudaMemcpy of 1 GiB, bytes read +
// written, median of 10: kernels::device::measure_copy_bandwidth_gbs) measured once before the widths, in the
// columns copy and %copy. A last line "# spmm_copy_bw_share S" gives the best GB/s of the sweep / copy GB/s
// (0-1; scripts/gpu-check.sh reads it).
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/bench.h"
#include "apps/cli_checks.h"
#include "apps/commands.h"
#include "core/bf16.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "io/part_file.h"
#include "kernels/cpu/ops.h"
#include "kernels/device.h"
#include "kernels/ops.h"
#include "partition/vertex_order.h"

namespace halogen::app {
namespace {

struct SpmmBenchOptions {
  int64_t rows = 1 << 20;
  double avg_degree = 16;
  std::vector<int64_t> widths = {16, 32, 64, 128};
  std::string graph = "uniform";
  bool pattern = false;
  bool scaled = false;
  bool accumulate = false;
  bool baseline_isa = false;
  bool cpu_clock = false;
  int threads = 0;
  int iterations = 20;
  int warmup = 3;
  int64_t check_rows = 1000;
  int64_t triad_mib = 256;
  uint64_t seed = 1;
  std::string device = "cpu";
  std::string partition;  // --partition DIR: a shard's local CSR instead of a generated matrix
  int part = 0;
  std::string precision = "fp32";  // bf16: X in BF16 (kernels::spmm_bf16), FP32 sums and output
};

struct HostCsr {
  int64_t rows = 0;
  int64_t cols = 0;  // = rows for the generated matrices; owned + halo for a shard
  Buffer<int64_t> indptr;
  Buffer<int32_t> indices;
  Buffer<float> values;
  int64_t nnz() const { return indices.size(); }
};

// splitmix64: a cheap counter-based hash for bulk benchmark data (rng.h's Philox is used where the numbers
// are part of the engine's semantics; here only speed and determinism matter).
inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline float unit_float(uint64_t seed, uint64_t index) {  // in [-1, 1)
  return static_cast<float>(mix(seed ^ mix(index)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

// Builds a CSR from per-row degrees and a column generator col(row, k), sorting columns within each row.
template <typename Degree, typename Column>
HostCsr build_csr(int64_t rows, uint64_t seed, Degree degree_of, Column column_of) {
  HostCsr a;
  a.rows = a.cols = rows;
  a.indptr = Buffer<int64_t>(rows + 1);
  a.indptr[0] = 0;
  for (int64_t r = 0; r < rows; ++r) a.indptr[r + 1] = a.indptr[r] + degree_of(r);
  const int64_t nnz = a.indptr[rows];
  a.indices = Buffer<int32_t>(nnz);
  a.values = Buffer<float>(nnz);
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
      a.indices[k] = column_of(r, k - a.indptr[r]);
      a.values[k] = 0.5f + 0.5f * unit_float(seed + 1, static_cast<uint64_t>(k));
    }
    std::sort(a.indices.data() + a.indptr[r], a.indices.data() + a.indptr[r + 1]);
  }
  return a;
}

// Uniform random columns; row degrees uniform in [0, 2 avg_degree] (so some rows are empty).
HostCsr uniform_csr(int64_t rows, double avg_degree, uint64_t seed) {
  const uint64_t max_degree = static_cast<uint64_t>(std::llround(2 * avg_degree));
  return build_csr(
      rows, seed, [&](int64_t r) { return static_cast<int64_t>(mix(seed ^ mix(r)) % (max_degree + 1)); },
      [&](int64_t r, int64_t k) {
        return static_cast<int32_t>(mix(seed * 31 + mix(static_cast<uint64_t>(r) * 4096 + k)) % rows);
      });
}

// RMAT (Graph500 quadrants a = .57, b = c = .19) edges over 2^scale >= rows ids, vertex ids scrambled by an
// odd multiplier (so hubs are spread, as Graph500 permutes them) and folded into [0, rows). Power-law
// degrees.
HostCsr rmat_csr(int64_t rows, double avg_degree, uint64_t seed) {
  int scale = 0;
  while ((int64_t{1} << scale) < rows) ++scale;
  const int64_t edges = static_cast<int64_t>(std::llround(avg_degree * rows));
  const uint64_t mask = (uint64_t{1} << scale) - 1;
  std::vector<int64_t> source(static_cast<size_t>(edges)), target(static_cast<size_t>(edges));
#pragma omp parallel for schedule(static)
  for (int64_t e = 0; e < edges; ++e) {
    uint64_t u = 0, v = 0;
    for (int level = 0; level < scale; ++level) {
      const float p = 0.5f + 0.5f * unit_float(seed * 977 + level, static_cast<uint64_t>(e));
      const uint64_t bit = uint64_t{1} << level;
      if (p < 0.57f) {
      } else if (p < 0.76f)
        v |= bit;
      else if (p < 0.95f)
        u |= bit;
      else
        u |= bit, v |= bit;
    }
    source[e] = static_cast<int64_t>(((u * 0x9E3779B97F4A7C15ull) & mask) % rows);
    target[e] = static_cast<int64_t>(((v * 0x9E3779B97F4A7C15ull) & mask) % rows);
  }
  std::vector<int64_t> start(static_cast<size_t>(rows) + 1, 0);
  for (int64_t e = 0; e < edges; ++e) ++start[source[e] + 1];
  for (int64_t r = 0; r < rows; ++r) start[r + 1] += start[r];
  std::vector<int32_t> columns(static_cast<size_t>(edges));
  {
    std::vector<int64_t> cursor(start.begin(), start.end() - 1);
    for (int64_t e = 0; e < edges; ++e) columns[cursor[source[e]]++] = static_cast<int32_t>(target[e]);
  }
  return build_csr(
      rows, seed, [&](int64_t r) { return start[r + 1] - start[r]; },
      [&](int64_t r, int64_t k) { return columns[start[r] + k]; });
}

// A shard's local CSR (owned rows, owned + halo columns, sorted within a row), its weights or values in
// [0, 1) as generated ones.
HostCsr shard_csr(const std::string& dir, int part, uint64_t seed) {
  const graph::Shard s = io::read_shard(dir, part);
  HostCsr a;
  a.rows = s.num_owned();
  a.cols = s.num_owned() + s.num_halo();
  a.indptr = Buffer<int64_t>(a.rows + 1);
  std::copy(s.indptr.begin(), s.indptr.end(), a.indptr.data());
  a.indices = Buffer<int32_t>(s.nnz());
  std::copy(s.indices.begin(), s.indices.end(), a.indices.data());
  a.values = Buffer<float>(s.nnz());
  for (int64_t k = 0; k < s.nnz(); ++k)
    a.values[k] =
        s.weight.empty() ? 0.5f + 0.5f * unit_float(seed + 1, static_cast<uint64_t>(k)) : s.weight[k];
  std::printf("# shard %s part %d: %lld owned, %lld halo rows; owned-owned bandwidth %lld\n", dir.c_str(),
              part, (long long)s.num_owned(), (long long)s.num_halo(),
              (long long)partition::owned_bandwidth(s));
  return a;
}

// Seconds on the chosen clock: wall time, or (--cpu-clock) this process's CPU time divided by the thread
// count, which on a machine shared with other jobs leaves out the time our threads wait for a core (memory
// bandwidth is still shared). Both the kernel and the triad are timed on the same clock.
double clock_seconds(bool cpu_clock) {
  if (!cpu_clock) return wall_seconds();
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return (static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec)) / omp_get_max_threads();
}

// STREAM triad a = b + s c on doubles, `mib` MiB per array, first touched by the same threads; best of 10
// (GB/s).
double triad_gbs(int64_t mib, bool cpu_clock) {
  const int64_t n = mib * (1 << 20) / 8;
  Buffer<double> a(n), b(n), c(n);
  double* __restrict__ pa = a.data();
  double* __restrict__ pb = b.data();
  double* __restrict__ pc = c.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) pa[i] = 0.0, pb[i] = 1.0, pc[i] = 2.0;
  const double s = 3.0;
  double best = 1e30;
  for (int trial = 0; trial < 10; ++trial) {
    const double start = clock_seconds(cpu_clock);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    best = std::min(best, clock_seconds(cpu_clock) - start);
  }
  HALOGEN_ASSERT(pa[n / 2] == 7.0);
  return 3.0 * 8.0 * static_cast<double>(n) / best / 1e9;
}

// STREAM copy c = a on doubles, `mib` MiB per array, first touched by the same threads; best of 10 (GB/s,
// bytes read + written).
double copy_gbs_of(int64_t mib, bool cpu_clock) {
  const int64_t n = mib * (1 << 20) / 8;
  Buffer<double> a(n), c(n);
  double* __restrict__ pa = a.data();
  double* __restrict__ pc = c.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) pa[i] = 1.0, pc[i] = 0.0;
  double best = 1e30;
  for (int trial = 0; trial < 10; ++trial) {
    const double start = clock_seconds(cpu_clock);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) pc[i] = pa[i];
    best = std::min(best, clock_seconds(cpu_clock) - start);
  }
  HALOGEN_ASSERT(pc[n / 2] == 1.0);
  return 2.0 * 8.0 * static_cast<double>(n) / best / 1e9;
}

// --scaled: a row and a column factor in [0.5, 1) per vertex (as gcn's 1/sqrt(deg + 1) would be).
struct Factors {
  Buffer<float> row, col;  // (rows) each, or empty
};
Factors make_factors(int64_t rows, int64_t cols, uint64_t seed) {
  Factors f{Buffer<float>(rows), Buffer<float>(cols)};
  for (int64_t r = 0; r < rows; ++r)
    f.row[r] = 0.75f + 0.25f * unit_float(seed + 2, static_cast<uint64_t>(r));
  for (int64_t c = 0; c < cols; ++c)
    f.col[c] = 0.75f + 0.25f * unit_float(seed + 3, static_cast<uint64_t>(c));
  return f;
}

// Elements of the sampled rows that differ from a double reference by more than the float summation bound.
int64_t count_wrong(const HostCsr& a, bool pattern, const Factors& factors, const Tensor& x,
                    const Tensor& out, int64_t check_rows) {
  const bool scaled = factors.row.size() > 0;
  const int64_t width = x.cols();
  const int64_t step = std::max<int64_t>(1, a.rows / std::max<int64_t>(1, check_rows));
  int64_t wrong = 0;
#pragma omp parallel for schedule(dynamic, 16) reduction(+ : wrong)
  for (int64_t r = 0; r < a.rows; r += step) {
    const int64_t degree = a.indptr[r + 1] - a.indptr[r];
    for (int64_t c = 0; c < width; ++c) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t k = a.indptr[r]; k < a.indptr[r + 1]; ++k) {
        const double value = scaled    ? static_cast<double>(factors.row[r]) * factors.col[a.indices[k]]
                             : pattern ? 1.0
                                       : a.values[k];
        const double term = value * x[static_cast<int64_t>(a.indices[k]) * width + c];
        sum += term;
        abs_sum += std::fabs(term);
      }
      // Float summation of `degree` terms: |error| <= degree 2^-24 sum |terms| (Higham), doubled for margin
      // (--scaled: one more rounding, the row factor's multiply).
      if (!(std::fabs(out[r * width + c] - sum) <= 2.0 * (degree + 2) * 5.97e-8 * abs_sum)) ++wrong;
    }
  }
  return wrong;
}

int64_t distinct_columns(const HostCsr& a) {
  std::vector<char> seen(static_cast<size_t>(a.cols), 0);
  for (int64_t k = 0; k < a.nnz(); ++k) seen[a.indices[k]] = 1;
  int64_t count = 0;
  for (char s : seen) count += s;
  return count;
}

void run_spmm_bench(const SpmmBenchOptions& options) {
  HALOGEN_USER_CHECK(options.rows > 0 && options.rows < (int64_t{1} << 31),
                     "bench spmm: --rows %lld must be in [1, 2^31)", (long long)options.rows);
  HALOGEN_USER_CHECK(options.avg_degree >= 0 && 2 * options.avg_degree <= static_cast<double>(options.rows),
                     "bench spmm: --avg-degree %g must be in [0, --rows / 2 = %lld] (rows hold up to twice the mean)",
                     options.avg_degree, (long long)(options.rows / 2));
  HALOGEN_USER_CHECK(options.iterations > 0 && options.warmup >= 0,
                     "bench spmm: --iters must be > 0, --warmup >= 0");
  HALOGEN_USER_CHECK(options.graph == "uniform" || options.graph == "rmat",
                     "bench spmm: --graph must be uniform or rmat, not '%s'", options.graph.c_str());
  for (int64_t width : options.widths)
    HALOGEN_USER_CHECK(width > 0, "bench spmm: widths must be positive, got %lld", (long long)width);
  const bool gpu = options.device == "cuda";
  HALOGEN_USER_CHECK(!options.scaled || (!gpu && !options.pattern),
                     "bench spmm: --scaled is a CPU matrix with factors instead of values (not with --device cuda "
                     "or --pattern)");
  if (gpu) kernels::device::initialise_device(0);  // UserError (one line) without a backend or GPU
  if (options.threads > 0) omp_set_num_threads(clamp_thread_count(options.threads, "--threads"));
  const int threads = omp_get_max_threads();
  if (options.baseline_isa) kernels::cpu::set_spmm_avx2_allowed(false);
  const bool bf16 = options.precision == "bf16";
  const double element_bytes = bf16 ? 2.0 : 4.0;  // of one gathered element of X

  Stopwatch setup;
  const HostCsr a = !options.partition.empty() ? shard_csr(options.partition, options.part, options.seed)
                    : options.graph == "rmat"  ? rmat_csr(options.rows, options.avg_degree, options.seed)
                                               : uniform_csr(options.rows, options.avg_degree, options.seed);
  const int64_t nnz = a.nnz(), distinct = distinct_columns(a);
  int64_t max_degree = 0;
  for (int64_t r = 0; r < a.rows; ++r) max_degree = std::max(max_degree, a.indptr[r + 1] - a.indptr[r]);
  const Factors factors = options.scaled ? make_factors(a.rows, a.cols, options.seed) : Factors{};
  kernels::CsrView host_view{a.rows,          a.cols,           nnz,
                             a.indptr.data(), a.indices.data(), options.pattern ? nullptr : a.values.data(),
                             Device::cpu};
  if (options.scaled) {
    host_view.values = nullptr;
    host_view.row_scale = factors.row.data();
    host_view.col_scale = factors.col.data();
  }
  // --device cuda: the matrix on the GPU, and the copy bandwidth it is compared with (measured once).
  Buffer<int64_t> device_indptr;
  Buffer<int32_t> device_indices;
  Buffer<float> device_values;
  kernels::CsrView view = host_view;
  double copy_gbs = 0.0;
  if (gpu) {
    device_indptr = a.indptr.clone(Device::cuda);
    device_indices = a.indices.clone(Device::cuda);
    device_values = a.values.clone(Device::cuda);
    view = kernels::CsrView{a.rows,
                            a.cols,
                            nnz,
                            device_indptr.data(),
                            device_indices.data(),
                            options.pattern ? nullptr : device_values.data(),
                            Device::cuda};
    copy_gbs = kernels::device::measure_copy_bandwidth_gbs();
  }

  std::printf(
      "# halogen bench spmm: out (%lld x width) %s= A (%lld x %lld, %s, nnz %lld, max degree %lld%s) X\n",
      (long long)a.rows, options.accumulate ? "+" : "", (long long)a.rows, (long long)a.cols,
      options.partition.empty() ? options.graph.c_str() : "shard", (long long)nnz, (long long)max_degree,
      options.pattern  ? ", pattern"
      : options.scaled ? ", row and column factors"
                       : "");
  if (gpu) {
    std::printf("# %s on %s, %s, %d warmup + %d timed calls per width (CUDA events), setup %.1f s\n",
                bf16 ? "X bfloat16, sums float32" : "float32", kernels::device::device_description().c_str(),
                bf16 ? "spmm_bf16 kernel" : "cuSPARSE SpMM", options.warmup, options.iterations, setup.seconds());
  } else {
    std::printf("# %s, %d threads, %s kernel, %d warmup + %d timed calls per width, setup %.1f s\n",
                bf16 ? "X bfloat16, sums float32" : "float32", threads, kernels::cpu::spmm_instruction_set(),
                options.warmup, options.iterations, setup.seconds());
  }
  std::printf(
      "# bytes = 8 (rows+1) + %d nnz%s + %d nnz width (X rows gathered per nonzero) + %d rows width (Y)\n",
      options.pattern || options.scaled ? 4 : 8, options.scaled ? " + 8 rows (factors)" : "", bf16 ? 2 : 4,
      options.accumulate ? 8 : 4);
  std::printf("# GB/s(min): X counted once per distinct column (%lld of %lld rows used)\n",
              (long long)distinct, (long long)a.cols);
  if (options.cpu_clock && !gpu) std::printf("# times are process CPU time / threads (--cpu-clock), not wall time\n");
  if (gpu) {
    std::printf("# GB/s from the best call; copy: device-to-device cudaMemcpy of 1 GiB (read + write), median of 10, "
                "measured once; %%copy = GB/s / copy\n");
  } else {
    std::printf(
        "# GB/s from the best call; copy: c = a, 2 x %lld MiB doubles; triad: a = b + s c, 3 x %lld MiB "
        "doubles; "
        "each best of 10, just before each width; %%copy = GB/s / copy, %%triad = GB/s / triad\n",
        (long long)options.triad_mib, (long long)options.triad_mib);
  }
  if (gpu)
    std::printf("#%7s %12s %11s %9s %8s %10s %8s %7s %7s\n", "width", "nnz", "median(ms)", "best(ms)", "GB/s",
                "GB/s(min)", "copy", "%copy", "#wrong");
  else
    std::printf("#%7s %12s %11s %9s %8s %10s %8s %7s %8s %7s %7s\n", "width", "nnz", "median(ms)", "best(ms)",
                "GB/s", "GB/s(min)", "copy", "%copy", "triad", "%triad", "#wrong");
  int64_t total_wrong = 0;
  double best_gbs = 0.0, best_share = 0.0, best_copy = 0.0;
  for (int64_t width : options.widths) {
    Tensor x(a.cols, width, Device::cpu), out(a.rows, width, Device::cpu);
    float* x_data = x.data();
    float* out_data = out.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < a.cols; ++r)
      for (int64_t c = 0; c < width; ++c) {
        // bf16: values BF16 holds exactly, so the reference check of x applies to the BF16 product unchanged.
        const float value = unit_float(options.seed + 7, static_cast<uint64_t>(r * width + c));
        x_data[r * width + c] = bf16 ? round_to_bf16(value) : value;
      }
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t c = 0; c < width; ++c) out_data[r * width + c] = 0.0f;
    Buffer<Bf16> x_bf16(bf16 ? a.cols : 0, width, Device::cpu);
    if (bf16) kernels::convert_to_bf16(x.matrix(), x_bf16.matrix());
    const double reference = gpu ? copy_gbs : copy_gbs_of(options.triad_mib, options.cpu_clock);
    const double triad = gpu ? 0.0 : triad_gbs(options.triad_mib, options.cpu_clock);
    std::vector<double> times;
    if (gpu) {
      Tensor x_device = x.clone(Device::cuda), out_device = out.clone(Device::cuda);
      Buffer<Bf16> x_bf16_device = x_bf16.clone(Device::cuda);
      kernels::device::PhaseTimer timer(1);
      for (int i = 0; i < options.warmup + options.iterations; ++i) {
        timer.begin(nullptr);
        if (bf16)
          kernels::spmm_bf16(view, x_bf16_device.matrix(), out_device.matrix(), options.accumulate);
        else
          kernels::spmm(view, x_device.matrix(), out_device.matrix(), options.accumulate);
        timer.end(nullptr);
        const double ms = timer.take_ms();  // waits for the call
        if (i >= options.warmup) times.push_back(ms * 1e-3);
      }
      out.copy_from(out_device);
    } else {
      for (int i = 0; i < options.warmup + options.iterations; ++i) {
        const double start = clock_seconds(options.cpu_clock);
        if (bf16)
          kernels::spmm_bf16(view, x_bf16.matrix(), out.matrix(), options.accumulate);
        else
          kernels::spmm(view, x.matrix(), out.matrix(), options.accumulate);
        if (i >= options.warmup) times.push_back(clock_seconds(options.cpu_clock) - start);
      }
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2], seconds = times.front();
    const double fixed_bytes = 8.0 * (a.rows + 1) + (options.pattern || options.scaled ? 4.0 : 8.0) * nnz +
                               (options.scaled ? 8.0 * a.rows : 0.0) +
                               (options.accumulate ? 8.0 : 4.0) * a.rows * width;
    const double gbs = (fixed_bytes + element_bytes * nnz * width) / seconds / 1e9;
    const double gbs_min = (fixed_bytes + element_bytes * distinct * width) / seconds / 1e9;
    int64_t wrong = 0;
    if (!options.accumulate) wrong = count_wrong(a, options.pattern, factors, x, out, options.check_rows);
    total_wrong += wrong;
    if (gbs > best_gbs) best_gbs = gbs, best_share = gbs / reference, best_copy = reference;
    if (gpu)
      std::printf(" %7lld %12lld %11.3f %9.3f %8.1f %10.1f %8.1f %6.0f%% %7lld\n", (long long)width,
                  (long long)nnz, median * 1e3, seconds * 1e3, gbs, gbs_min, reference,
                  100.0 * gbs / reference, (long long)wrong);
    else
      std::printf(" %7lld %12lld %11.3f %9.3f %8.1f %10.1f %8.1f %6.0f%% %8.1f %6.0f%% %7lld\n",
                  (long long)width, (long long)nnz, median * 1e3, seconds * 1e3, gbs, gbs_min, reference,
                  100.0 * gbs / reference, triad, 100.0 * gbs / triad, (long long)wrong);
    std::fflush(stdout);
  }
  std::printf("# %s\n", total_wrong == 0 ? "all checked elements correct" : "WRONG RESULTS");
  std::printf("# spmm_copy_bw_share %.3f (best GB/s %.1f / copy GB/s %.1f)\n", best_share, best_gbs,
              best_copy);
  if (total_wrong != 0) exit_code() = 1;
}

}  // namespace

double stream_triad_gbs(int64_t mib) { return triad_gbs(mib, /*cpu_clock=*/false); }
double stream_copy_gbs(int64_t mib) { return copy_gbs_of(mib, /*cpu_clock=*/false); }

SpmmTiming spmm_timing(int64_t rows, double avg_degree, const std::vector<int64_t>& widths, int iterations,
                       uint64_t seed) {
  const HostCsr a = uniform_csr(rows, avg_degree, seed);
  const kernels::CsrView view{a.rows, a.rows, a.nnz(), a.indptr.data(), a.indices.data(), a.values.data(),
                              Device::cpu};
  SpmmTiming timing;
  timing.rows = a.rows;
  timing.nnz = a.nnz();
  for (int64_t width : widths) {
    Tensor x(a.rows, width, Device::cpu), out(a.rows, width, Device::cpu);
    float* x_data = x.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < a.rows * width; ++i) x_data[i] = unit_float(seed + 7, static_cast<uint64_t>(i));
    double best = 1e30;
    for (int i = 0; i < iterations + 1; ++i) {  // the first call warms up
      const double start = wall_seconds();
      kernels::spmm(view, x.matrix(), out.matrix(), false);
      if (i > 0) best = std::min(best, wall_seconds() - start);
    }
    timing.seconds.push_back(best);
  }
  return timing;
}

void add_bench_spmm(CLI::App& bench) {
  auto options = std::make_shared<SpmmBenchOptions>();
  CLI::App* cmd =
      bench.add_subcommand("spmm", "CSR SpMM: achieved GB/s against a STREAM triad (CPU) or device copy (GPU)");
  cmd->add_option("--rows", options->rows, "Rows (= columns) of the square sparse matrix")
      ->check(positive())->capture_default_str();
  cmd->add_option("--avg-degree", options->avg_degree, "Mean nonzeros per row (at most --rows / 2)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--width", options->widths, "Dense widths to sweep (e.g. --width 16 64 128)")
      ->capture_default_str();
  cmd->add_option("--graph", options->graph, "Sparsity pattern: uniform (random columns) or rmat (power law)")
      ->capture_default_str();
  cmd->add_option(
      "--partition", options->partition,
      "A partition directory: benchmark the local CSR of its shard --part (owned rows by owned + halo "
      "columns, in the shard's vertex order) instead of a generated matrix");
  cmd->add_option("--part", options->part, "The shard of --partition")
      ->check(non_negative())
      ->capture_default_str();
  cmd->add_flag("--pattern", options->pattern, "All-ones matrix (no values array)");
  cmd->add_flag("--scaled", options->scaled,
                "Implicit values: a row and a column factor per vertex (gcn's form), no values array (CPU)");
  cmd->add_flag("--accumulate", options->accumulate, "out += A X instead of out = A X (no #wrong check)");
  cmd->add_flag("--no-avx2", options->baseline_isa,
                "Use the baseline x86-64 (SSE2) kernel even where AVX2 exists");
  cmd->add_flag("--cpu-clock", options->cpu_clock,
                "Time with process CPU time / threads (a machine shared with other jobs), not wall time");
  cmd->add_option("--threads", options->threads, "OpenMP threads (0: OMP_NUM_THREADS or all cores)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--iters", options->iterations, "Timed calls per width")->check(positive())->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Untimed calls per width before timing")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--check-rows", options->check_rows, "Rows compared with the reference (0: no check)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--triad-mib", options->triad_mib,
                  "MiB per STREAM copy and triad array (several times the LLC)")
      ->check(positive())
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the generated matrix and data")
      ->check(seed_value())
      ->capture_default_str();
  cmd->add_option("--device", options->device,
                  "cpu (OpenMP kernel, against a STREAM triad) or cuda (cuSPARSE, against device-to-device copy GB/s)")
      ->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--precision", options->precision,
                  "fp32, or bf16: X stored in BF16 and widened in the gather (kernels::spmm_bf16), FP32 sums")
      ->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  cmd->callback([options] { run_spmm_bench(*options); });
}

}  // namespace halogen::app
