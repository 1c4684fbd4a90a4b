#pragma once
// What one training epoch (forward, loss, backward, gradient allreduce, Adam: the span of train's
// `mean_epoch_ms`, evaluation excluded) costs on one rank, predicted from the rank's shape and a device
// profile, before anything is allocated. `halogen plan` prints it next to train::estimate_rank_memory.
//
// The model follows the engine's GCN schedule (nn/model.h, nn/graph_conv.h, nn/distributed_adjacency.h):
//   layer l (in = F_l, out = F_{l+1}): transform first when out < in (GEMM, then S T, exchange of width out),
//   else aggregate first (exchange of width in, S X, then GEMM); backward: the weight gradient GEMM, the
//   input gradient GEMM and S^T (reverse exchange) except for layer 0, whose input has no gradient
//   (an aggregate-first layer 0 then runs no backward SpMM at all).
//   SpMM time   = bytes / spmm_gbs(width, rows of X), bytes = 8 (rows + 1) + 8 entries + 4 entries width
//                 (1 - hit) + 4 rows width (indices and values, X rows gathered per entry unless cached, Y
//                 written), entries = nnz + n (GCN's self-loops). The rate is measured per width and per size
//                 of X (owned + halo rows) on uniform random matrices, so what a CPU's caches and TLB give a
//                 smaller X is in the rate (bench profile; profile cache_bytes 0). hit (profiles that state a
//                 cache_bytes only): an LRU cache of cache_bytes (divided among the ranks of a node when
//                 shared) under Che's approximation, from the rank's column-use curve
//                 (RankTraffic::top_column_entries; 0 when unknown).
//   GEMM time   = max(2 m n k / gemm_gflops, 4 (m k + k n + m n) / stream_gbs)  (tall-skinny GEMMs of small
//                 widths are bandwidth-bound).
//   halo time   = peers x latency + 4 width max(send rows, halo rows) / exchange_gbs (else link_gbs) per
//                 exchange, plus packing (8 bytes per float sent) at stream bandwidth.
//   overlap     = DistributedAdjacency: the owned product A_own runs while the exchange is in flight, so an
//                 exchange is exposed for halo time - min(overlap_share x halo time, A_own time) (all of it
//                 when overlap is off or the profile says communication does not progress during compute).
//   elementwise = dropout epilogue elements / dropout_gelems (the fused epilogue's measured rate, its memory
//                 traffic included) + bias, relu backward, loss and scatter bytes / stream_gbs.
//   allreduce   = ring over the gradient buffer: 2 (P-1)/P bytes / link_gbs + 2 (P-1) latency; it overlaps
//                 the backward of the layers below the last (nn/gradient_reducer.h), so the exposed part is
//                 max(ring of layer 0's gradients, ring - that backward work).
//   optimizer   = Adam reads p, g, m, v and writes p, m, v: 28 bytes per parameter / stream_gbs.
// Only GCN is modelled (a UserError for other kinds names the supported one).
#include <cstdint>
#include <string>
#include <vector>

#include "nn/model.h"

namespace halogen::train {

// Rates of one device (a GPU, or a CPU socket with `threads` OpenMP threads per rank).
struct ComputeRates {
  int threads = 1;                   // CPU: OpenMP threads per rank these were measured with (GPU: 1)
  double stream_gbs = 0;             // STREAM triad (CPU) / device copy (GPU) bandwidth, GB/s
  std::vector<int64_t> spmm_widths;  // ascending widths at which spmm_gbs was measured
  // Rows of the dense operand X at which the SpMM rates were measured (ascending); empty: one set of rates
  // for every size. A CPU's rate depends on how much of X its caches and TLB hold, which a rate per size
  // measures directly (bench profile: uniform random CSRs of 2^17 and 2^19 rows).
  std::vector<int64_t> spmm_rows;
  // Row-major [size][width] (one row of widths when spmm_rows is empty): bytes as estimate_epoch counts
  // them (cache hits excluded) / s.
  std::vector<double> spmm_gbs;
  double gemm_gflops = 0;            // sgemm rate on the shapes of a GCN layer
  double dropout_gelems = 0;         // elements per second of the fused bias/relu/dropout epilogue, 1e9 / s
};

struct DeviceProfile {
  std::string name;                 // e.g. "h200" or "cpu-<host>"
  std::string kind;                 // "cpu" or "cuda"
  bool calibrated = false;          // measured by `halogen bench profile` (false: datasheet figures)
  std::string source;               // how the figures were obtained (free text, printed by plan)
  std::vector<ComputeRates> rates;  // ascending threads (one entry for a GPU)
  double link_gbs = 0;         // bytes per second one rank moves to its peers (allreduce bus bandwidth), GB/s
  double exchange_gbs = 0;     // point-to-point exchange bandwidth for the halo, GB/s (0: link_gbs)
  double link_latency_us = 0;  // per message
  bool overlap = true;         // whether an exchange progresses while the owned product runs
  // Share of an exchange's time that the owned product can hide when it is long enough (bench profile measures
  // it: MPI over shared memory copies on the ranks' own cores, inside MPI calls, so little is hidden there).
  double overlap_share = 1.0;
  int64_t cache_bytes = 0;     // last-level cache of one device/socket (0: none modelled)
  bool cache_shared = false;   // CPU: the ranks of a node share it (each gets cache_bytes / ranks)
  // Between nodes (a job of more than ranks_per_node ranks; 0: no such figures, `link` serves every size).
  int ranks_per_node = 0;
  double inter_link_gbs = 0, inter_link_latency_us = 0;
  int64_t memory_bytes = 0;  // memory of one device (0: unknown), for the "fits" column

  // The rates for `threads` per rank: the entry with that many threads, else the largest below it (the
  // first when none is below). Asserts that rates is not empty.
  const ComputeRates& rates_for(int threads) const;
};

// Interpolated SpMM rate (GB/s) at `width` with a dense operand of `x_rows` rows: linear in log2(width)
// between measured widths and in log2(rows) between measured sizes, clamped at the ends.
double spmm_rate_at(const ComputeRates& rates, int64_t width, int64_t x_rows);

// What one rank's shape needs beyond nn::RankShape for time: the entries of its CSR in halo columns (the
// A_halo part, which cannot overlap the exchange) and the parts it exchanges with.
struct RankTraffic {
  int64_t halo_entries = 0;
  int64_t peers = 0;  // parts this rank receives from (= sends to, for a symmetric graph)
  // [i]: entries of the rank's CSR in its 2^i most used columns; the last element covers every column
  // (= nnz). Empty: unknown (no cache hits are assumed, the conservative end).
  std::vector<int64_t> top_column_entries;
};

// Share of a CSR's gathers an LRU cache of `cached_rows` rows of X serves (Che's approximation: a row used
// with probability q per reference is cached with probability 1 - exp(-q T), T such that the expected
// occupancy is the cache; within each power-of-two bucket of the curve the columns are taken as equally
// used); 1 when every column fits, 0 for an empty curve.
double cached_entry_share(const std::vector<int64_t>& top_column_entries, double cached_rows);

// top_column_entries from per-column entry counts (any order; consumed).
std::vector<int64_t> top_column_curve(std::vector<int64_t> column_counts);

// SpMM bytes as estimate_epoch counts them: 8 (rows + 1) + 8 entries + 4 width (entries (1 - hit) + rows),
// hit = share of entries whose row of X is served by the cache.
double spmm_model_bytes(int64_t rows, int64_t entries, int64_t width, double hit, double element_bytes = 4.0);

// One timed SpMM of `halogen bench profile`: the matrix's shape, the dense width and the best time.
struct SpmmSample {
  int64_t rows = 0, entries = 0, width = 0;
  double seconds = 0;
};

// The sample's GB/s as the model counts bytes (every gather from memory: hit 0).
double spmm_sample_gbs(const SpmmSample& sample);

// Milliseconds per phase of one training epoch on one rank; names as train's metrics.
struct EpochEstimate {
  double epoch_ms = 0;
  double spmm_ms = 0;
  double gemm_ms = 0;
  double elementwise_ms = 0;        // dropout, bias, relu, masks, loss
  double halo_ms = 0;               // exchanges in flight (pack + transfer)
  double halo_exposed_ms = 0;       // the part the owned products do not hide
  double allreduce_ms = 0;          // the ring's transfer time
  double allreduce_exposed_ms = 0;  // the part the backward does not hide
  double optimizer_ms = 0;
  int64_t spmm_bytes = 0, gemm_flops = 0, halo_bytes = 0;  // per epoch, for the curious
};

// The estimate for one rank. `num_ranks` sizes the allreduce; `config.kind` must be gcn.
EpochEstimate estimate_epoch(const nn::ModelConfig& config, const nn::RankShape& shape,
                             const RankTraffic& traffic, int num_ranks, const DeviceProfile& profile,
                             int threads);

}  // namespace halogen::train
