// `halogen bench gemm`: the dense products of a GCN layer through kernels::gemm (OpenBLAS sgemm on the CPU),
// for (n x f_in) activations and (f_in x f_out) weights. For each shape three products, as training runs
// them:
//   forward  Z = H W            (n x f_in)(f_in x f_out)
//   grad_w   dW = H^T dZ        (f_in x n)(n x f_out)
//   grad_h   dH = dZ W^T        (n x f_out)(f_out x f_in)
// each 2 n f_in f_out flops. nccl-tests style table:  op  m  n  k  time(ms)  GFLOP/s  %ref  #wrong
// time(ms) is the median of --iters calls; %ref compares with a square (--ref-size)^3 sgemm measured in the
// same run, as a practical peak of this BLAS on this machine. #wrong counts sampled output elements farther
// from a double-precision dot product than the float summation bound; the command exits 1 if any.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/cli_checks.h"
#include "apps/bench.h"
#include "apps/commands.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/timer.h"
#include "kernels/ops.h"

namespace halogen::app {
namespace {

struct GemmBenchOptions {
  int64_t rows = 1 << 18;
  std::vector<std::string> shapes = {"128x128", "128x16", "256x256", "512x64"};
  int threads = 0;
  int iterations = 10;
  int warmup = 2;
  int64_t ref_size = 2048;
  uint64_t seed = 1;
};

inline float data_value(uint64_t seed, uint64_t index) {  // in [-1, 1), a cheap counter-based hash
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + index;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

Tensor random_tensor(int64_t rows, int64_t cols, uint64_t seed) {
  Tensor t(rows, cols, Device::cpu);
  float* data = t.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows * cols; ++i) data[i] = data_value(seed, static_cast<uint64_t>(i));
  return t;
}

struct Product {
  const char* name;
  const Tensor* a;
  bool transpose_a;
  const Tensor* b;
  bool transpose_b;
  Tensor* c;
};

double median_seconds(const Product& p, const GemmBenchOptions& options) {
  std::vector<double> times;
  for (int i = 0; i < options.warmup + options.iterations; ++i) {
    Stopwatch watch;
    kernels::gemm(p.a->matrix(), p.transpose_a, p.b->matrix(), p.transpose_b, p.c->matrix(), 1.0f, 0.0f);
    if (i >= options.warmup) times.push_back(watch.seconds());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Sampled elements of c farther from the double-precision product than the float summation bound.
int64_t count_wrong(const Product& p, int64_t m, int64_t n, int64_t k) {
  const auto element = [](const Tensor& t, bool transposed, int64_t r, int64_t c) {
    return transposed ? t[c * t.cols() + r] : t[r * t.cols() + c];
  };
  int64_t wrong = 0;
  for (int sample = 0; sample < 256; ++sample) {
    const int64_t i = (sample * 7919) % m, j = (sample * 104729) % n;
    double sum = 0.0, abs_sum = 0.0;
    for (int64_t l = 0; l < k; ++l) {
      const double term = double(element(*p.a, p.transpose_a, i, l)) * element(*p.b, p.transpose_b, l, j);
      sum += term;
      abs_sum += std::fabs(term);
    }
    // Float dot product of k terms in any order: |error| <= k 2^-24 sum |terms| (Higham), doubled for margin.
    if (!(std::fabs((*p.c)[i * n + j] - sum) <= 2.0 * (k + 1) * 5.97e-8 * abs_sum)) ++wrong;
  }
  return wrong;
}

void run_gemm_bench(const GemmBenchOptions& options) {
  HALOGEN_USER_CHECK(options.rows > 0, "bench gemm: --rows must be positive");
  HALOGEN_USER_CHECK(options.iterations > 0 && options.warmup >= 0,
                     "bench gemm: --iters must be > 0, --warmup >= 0");
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const std::string& shape : options.shapes) {
    long long f_in = 0, f_out = 0;
    char extra = 0;
    HALOGEN_USER_CHECK(
        std::sscanf(shape.c_str(), "%lldx%lld%c", &f_in, &f_out, &extra) == 2 && f_in > 0 && f_out > 0,
        "bench gemm: --shapes entry '%s' is not F_INxF_OUT (e.g. 128x16)", shape.c_str());
    shapes.emplace_back(f_in, f_out);
  }
  if (options.threads > 0) omp_set_num_threads(clamp_thread_count(options.threads, "--threads"));
  const int threads = omp_get_max_threads();

  double ref_gflops = 0.0;
  if (options.ref_size > 0) {
    const int64_t s = options.ref_size;
    Tensor a = random_tensor(s, s, options.seed), b = random_tensor(s, s, options.seed + 1),
           c(s, s, Device::cpu);
    const Product square{"square", &a, false, &b, false, &c};
    ref_gflops = 2.0 * s * s * s / median_seconds(square, options) / 1e9;
  }
  std::printf(
      "# halogen bench gemm: GCN layer products for n = %lld rows, float32, %d threads, OpenBLAS sgemm\n",
      (long long)options.rows, threads);
  std::printf("# %d warmup + %d timed calls each; time(ms) is the median; GFLOP/s = 2 m n k / time\n",
              options.warmup, options.iterations);
  if (ref_gflops > 0)
    std::printf("# ref: square %lld^3 sgemm in this run: %.1f GFLOP/s (%%ref = GFLOP/s / ref)\n",
                (long long)options.ref_size, ref_gflops);
  std::printf("#%8s %9s %7s %9s %10s %9s %6s %7s\n", "op", "m", "n", "k", "time(ms)", "GFLOP/s", "%ref",
              "#wrong");
  int64_t total_wrong = 0;
  for (auto [f_in, f_out] : shapes) {
    const int64_t n = options.rows;
    Tensor h = random_tensor(n, f_in, options.seed + 2), w = random_tensor(f_in, f_out, options.seed + 3);
    Tensor grad_z = random_tensor(n, f_out, options.seed + 4);
    Tensor z(n, f_out, Device::cpu), grad_w(f_in, f_out, Device::cpu), grad_h(n, f_in, Device::cpu);
    const Product products[3] = {{"forward", &h, false, &w, false, &z},
                                 {"grad_w", &h, true, &grad_z, false, &grad_w},
                                 {"grad_h", &grad_z, false, &w, true, &grad_h}};
    const int64_t dims[3][3] = {{n, f_out, f_in}, {f_in, f_out, n}, {n, f_in, f_out}};  // m, n, k
    for (int i = 0; i < 3; ++i) {
      const double seconds = median_seconds(products[i], options);
      const double gflops = 2.0 * n * f_in * f_out / seconds / 1e9;
      const int64_t wrong = count_wrong(products[i], dims[i][0], dims[i][1], dims[i][2]);
      total_wrong += wrong;
      std::printf(" %8s %9lld %7lld %9lld %10.3f %9.1f %5.0f%% %7lld\n", products[i].name,
                  (long long)dims[i][0], (long long)dims[i][1], (long long)dims[i][2], seconds * 1e3, gflops,
                  ref_gflops > 0 ? 100.0 * gflops / ref_gflops : 0.0, (long long)wrong);
      std::fflush(stdout);
    }
  }
  std::printf("# %s\n", total_wrong == 0 ? "all checked elements correct" : "WRONG RESULTS");
  if (total_wrong != 0) exit_code() = 1;
}

}  // namespace

double gemm_layer_gflops(int64_t rows, int64_t f_in, int64_t f_out, int iterations) {
  GemmBenchOptions options;
  options.iterations = iterations;
  options.warmup = 1;
  Tensor h = random_tensor(rows, f_in, 1), w = random_tensor(f_in, f_out, 2), z(rows, f_out, Device::cpu);
  Tensor dz = random_tensor(rows, f_out, 3), dw(f_in, f_out, Device::cpu), dh(rows, f_in, Device::cpu);
  const Product products[] = {{"forward", &h, false, &w, false, &z},
                              {"grad_w", &h, true, &dz, false, &dw},
                              {"grad_h", &dz, false, &w, true, &dh}};
  double seconds = 0;
  for (const Product& p : products) seconds += median_seconds(p, options);
  return 3 * 2.0 * static_cast<double>(rows) * f_in * f_out / seconds / 1e9;
}

double square_sgemm_gflops(int64_t size, int iterations) {
  GemmBenchOptions options;
  options.iterations = iterations;
  options.warmup = 1;
  Tensor a = random_tensor(size, size, 1), b = random_tensor(size, size, 2), c(size, size, Device::cpu);
  const Product square{"square", &a, false, &b, false, &c};
  return 2.0 * static_cast<double>(size) * size * size / median_seconds(square, options) / 1e9;
}

void add_bench_gemm(CLI::App& bench) {
  auto options = std::make_shared<GemmBenchOptions>();
  CLI::App* cmd = bench.add_subcommand("gemm", "CPU GEMM (OpenBLAS) GFLOP/s for the products of a GCN layer");
  cmd->add_option("--rows", options->rows, "Rows n of the activations")->check(positive())->capture_default_str();
  cmd->add_option("--shapes", options->shapes, "Weight shapes F_INxF_OUT to sweep")->capture_default_str();
  cmd->add_option("--threads", options->threads, "OpenMP/OpenBLAS threads (0: OMP_NUM_THREADS or all cores)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--iters", options->iterations, "Timed calls per product")->check(positive())->capture_default_str();
  cmd->add_option("--warmup", options->warmup, "Untimed calls per product before timing")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--ref-size", options->ref_size, "Size of the square reference sgemm (0: skip)")
      ->check(non_negative())->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed of the data")->check(seed_value())->capture_default_str();
  cmd->callback([options] { run_gemm_bench(*options); });
}

}  // namespace halogen::app
