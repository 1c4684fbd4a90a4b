#pragma once
// GradientReducer: the gradient allreduce in buckets, each started as soon as the gradients it holds are final
// and overlapped with the rest of the backward pass (PyTorch DDP's reducer, at the granularity of layers).
//
// Layout. The store's flat gradient buffer is cut into layer ranges: maximal runs of consecutive tensors with
// one ParameterInfo::layer (a layer whose tensors were registered together, as GraphConv does, is one range).
// Buckets take whole ranges from the END of the buffer towards its start, i.e. in reverse layer order, the
// order in which the backward pass finishes them; a bucket closes at the first range boundary where it holds
// at least `bucket_bytes`, and the ranges left at the start of the buffer close the last one. A range is
// never split. bucket_bytes = 0 gives one bucket per layer range (the default: this engine has a few small
// layers, so the latency of L allreduces is microseconds against a layer's backward of milliseconds, and
// every layer but the first one processed can hide behind the rest of the backward); kOneBucket gives one
// bucket for the whole buffer (nothing to overlap, e.g. BPTT windows). DDP fills ~25 MiB buckets because its
// models have hundreds of tensors; pass that size here for such a model. Each bucket is one contiguous slice
// of store.grads(), and the boundaries depend only on the store's layout and bucket_bytes: the same on every
// rank.
//
// One training step (every call collective in the sense that every rank makes the same calls in the same
// order; the model's backward does this):
//   reducer.begin(compute_stream);   // before the backward; nothing in flight
//   ... backward of layer l queued ...;  reducer.layer_ready(l);   // each layer with parameters, once
//   reducer.finish();                // work queued afterwards on compute_stream sees the sums over ranks
// layer_ready(l): the gradients of layer l are final once what is queued on the compute stream so far is
// done. Every bucket all of whose ranges are ready is started (Communicator::start_allreduce_sum), strictly
// in bucket order: a bucket that is complete before an earlier one waits for that one, so every rank starts
// the same collectives in the same order whatever order the layers are reported in. all_ready() reports every
// layer (models whose gradients are final only at the end, like a BPTT window). Every call also lets the
// buckets in flight progress (Communicator::progress: MPI moves data only inside MPI calls). finish()
// requires every layer to have been reported.
//
// Results: the sums in bucket b are bitwise those of comm.allreduce_sum on the same slice (the Communicator
// contract), so they depend on bucket_bytes only through the boundaries, never on the overlap.
//
// Timing, when a PhaseClock is given: Phase::allreduce from the first bucket's start to the end of finish()
// (communication in flight), Phase::allreduce_exposed around finish()'s waits (what the backward pass did not
// hide, including waiting for slower ranks).
//
// The reducer allocates nothing per step (its bookkeeping is sized at construction); the communicator's
// Request objects are small host allocations, as for the halo exchange.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "nn/parameters.h"
#include "nn/profile.h"

namespace halogen::nn {

class GradientReducer {
 public:
  static constexpr int64_t kDefaultBucketBytes = 0;  // one bucket per layer range
  static constexpr int64_t kOneBucket = std::numeric_limits<int64_t>::max();

  // One slice of store.grads(): floats [offset, offset + count), holding ranges [first_range, last_range]
  // (ranges numbered from the start of the buffer).
  struct Bucket {
    int64_t offset = 0, count = 0;
    int first_range = 0, last_range = 0;
  };

  // `store` must be allocated; it and `comm` (and `clock`, when given) must outlive the reducer.
  GradientReducer(ParameterStore& store, comm::Communicator& comm, int64_t bucket_bytes = kDefaultBucketBytes,
                  PhaseClock* clock = nullptr);
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Starts a step whose gradients are computed on `compute_stream` (nullptr on the CPU).
  void begin(kernels::Stream compute_stream);
  // Layer `layer`'s gradients are final (queued). Layers without parameters are ignored.
  void layer_ready(int layer);
  // Every layer's gradients are final (queued).
  void all_ready();
  // Waits for every bucket; ends the step.
  void finish();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  // Bucket b, in start order (bucket 0 holds the last layers of the buffer).
  const Bucket& bucket(int b) const { return buckets_[b]; }

 private:
  struct Range {
    int layer = 0;
    int64_t offset = 0, count = 0;
    int bucket = 0;
  };
  void mark_ready(int layer);
  void start_complete_buckets();
  void progress_in_flight();

  ParameterStore& store_;
  comm::Communicator& comm_;
  PhaseClock* clock_ = nullptr;
  std::vector<Range> ranges_;
  std::vector<std::vector<int>> ranges_of_layer_;  // layer id -> its ranges
  std::vector<Bucket> buckets_;
  // Per step:
  std::vector<int> pending_;         // per bucket: ranges not yet ready
  std::vector<char> layer_reported_;  // per layer id
  std::vector<std::unique_ptr<comm::Request>> requests_;  // per bucket, while in flight
  int next_to_start_ = 0;  // buckets [0, next_to_start_) are started
  bool in_step_ = false;
  kernels::Stream stream_ = nullptr;
};

}  // namespace halogen::nn
