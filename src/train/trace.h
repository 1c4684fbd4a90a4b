#pragma once
// `train --trace FILE`: a Chrome / Perfetto trace (JSON, "traceEvents") of the training run, one process per
// rank ("rank r (host)"), one thread per kind of span so that overlapping intervals stay readable:
//   compute         spmm, gemm, elementwise, optimizer
//   halo            "halo in flight" (an exchange from post to the end of its unpack)
//   halo wait       "halo post/wait" (packing, posting, waiting, unpacking: the exposed part)
//   allreduce       "allreduce in flight" (the gradient buckets)
//   allreduce wait  "allreduce wait" (what the backward pass did not hide, and the loss allreduce)
// Each span's args carry its epoch. Times are microseconds from a barrier just before epoch 1 that every
// rank leaves at about the same time, so the ranks line up to within that barrier's skew. Evaluation passes
// are recorded too (they are the gaps between training epochs in the metrics' times). Open the file in
// https://ui.perfetto.dev or chrome://tracing; scripts/scaling/plot_trace.py draws it as a PNG.
//
// Host wall-clock spans of the CPU clock only (--device cpu); at most kTraceSpansPerRank spans per rank are
// kept (a counter in the file's metadata says how many were dropped).
#include <cstdint>
#include <string>

#include "comm/communicator.h"
#include "nn/profile.h"

namespace halogen::train {

inline constexpr int64_t kTraceSpansPerRank = 1 << 18;

// Collective: gathers every rank's spans on rank 0, which writes `path` (atomically). `origin_s`: this rank's
// wall clock at the common origin.
void write_trace(comm::Communicator& comm, const nn::TraceRecorder& recorder, double origin_s,
                 const std::string& path);

}  // namespace halogen::train
