#include "nn/gradient_reducer.h"

#include <algorithm>

#include "core/error.h"

namespace halogen::nn {

GradientReducer::GradientReducer(ParameterStore& store, comm::Communicator& comm, int64_t bucket_bytes,
                                 PhaseClock* clock)
    : store_(store), comm_(comm), clock_(clock) {
  HALOGEN_ASSERT(bucket_bytes >= 0);
  HALOGEN_ASSERT(store.grads().size() == store.total_size(), "the parameter store is not allocated");
  // Layer ranges: tensors are laid out in registration order, so consecutive tensors of one layer are adjacent.
  int max_layer = -1;
  for (int k = 0; k < store.count(); ++k) {
    const ParameterInfo& info = store.info(k);
    HALOGEN_ASSERT(info.layer >= 0, "tensor %s has layer %d", info.name.c_str(), info.layer);
    max_layer = std::max(max_layer, info.layer);
    if (!ranges_.empty() && ranges_.back().layer == info.layer) {
      HALOGEN_ASSERT(ranges_.back().offset + ranges_.back().count == info.offset);
      ranges_.back().count += info.size();
    } else {
      HALOGEN_ASSERT(info.offset == (ranges_.empty() ? 0 : ranges_.back().offset + ranges_.back().count));
      ranges_.push_back(Range{info.layer, info.offset, info.size(), 0});
    }
  }
  ranges_of_layer_.resize(max_layer + 1);
  for (int r = 0; r < static_cast<int>(ranges_.size()); ++r) ranges_of_layer_[ranges_[r].layer].push_back(r);

  // Buckets from the end of the buffer: a bucket closes at the first range boundary where it holds enough.
  for (int r = static_cast<int>(ranges_.size()) - 1; r >= 0; --r) {
    if (buckets_.empty() || buckets_.back().count * static_cast<int64_t>(sizeof(float)) >= bucket_bytes)
      buckets_.push_back(Bucket{0, 0, r, r});
    Bucket& bucket = buckets_.back();
    bucket.offset = ranges_[r].offset;
    bucket.count += ranges_[r].count;
    bucket.first_range = r;
    ranges_[r].bucket = num_buckets() - 1;
  }
  pending_.assign(buckets_.size(), 0);
  layer_reported_.assign(ranges_of_layer_.size(), 0);
  requests_.resize(buckets_.size());
}

void GradientReducer::begin(kernels::Stream compute_stream) {
  HALOGEN_ASSERT(!in_step_, "begin() while the last step's buckets are in flight");
  in_step_ = true;
  stream_ = compute_stream;
  next_to_start_ = 0;
  std::fill(pending_.begin(), pending_.end(), 0);
  for (const Range& range : ranges_) ++pending_[range.bucket];
  std::fill(layer_reported_.begin(), layer_reported_.end(), 0);
}

void GradientReducer::mark_ready(int layer) {
  if (layer >= static_cast<int>(ranges_of_layer_.size())) return;  // no parameters
  HALOGEN_ASSERT(!layer_reported_[layer], "layer %d reported twice in one step", layer);
  layer_reported_[layer] = 1;
  for (int r : ranges_of_layer_[layer]) --pending_[ranges_[r].bucket];
}

void GradientReducer::layer_ready(int layer) {
  HALOGEN_ASSERT(in_step_, "layer_ready() outside begin()/finish()");
  HALOGEN_ASSERT(layer >= 0, "layer %d", layer);
  progress_in_flight();
  mark_ready(layer);
  start_complete_buckets();
}

void GradientReducer::all_ready() {
  HALOGEN_ASSERT(in_step_, "all_ready() outside begin()/finish()");
  for (int layer = 0; layer < static_cast<int>(ranges_of_layer_.size()); ++layer)
    if (!layer_reported_[layer]) mark_ready(layer);
  start_complete_buckets();
}

void GradientReducer::start_complete_buckets() {
  while (next_to_start_ < num_buckets() && pending_[next_to_start_] == 0) {
    if (next_to_start_ == 0 && clock_ != nullptr) clock_->begin(Phase::allreduce, stream_);
    const Bucket& bucket = buckets_[next_to_start_];
    requests_[next_to_start_] = comm_.start_allreduce_sum(store_.grads().data() + bucket.offset, bucket.count, stream_);
    ++next_to_start_;
  }
}

void GradientReducer::progress_in_flight() {
  for (int b = 0; b < next_to_start_; ++b) comm_.progress(*requests_[b]);
}

void GradientReducer::finish() {
  HALOGEN_ASSERT(in_step_, "finish() without begin()");
  HALOGEN_ASSERT(next_to_start_ == num_buckets(), "finish() before every layer was reported (bucket %d of %d not "
                 "started)", next_to_start_, num_buckets());
  in_step_ = false;
  if (num_buckets() == 0) return;
  if (clock_ != nullptr) clock_->begin(Phase::allreduce_exposed, stream_);
  for (int b = 0; b < num_buckets(); ++b) comm_.wait(std::move(requests_[b]), stream_);
  if (clock_ != nullptr) {
    clock_->end(Phase::allreduce_exposed, stream_);
    clock_->end(Phase::allreduce, stream_);
  }
}

}  // namespace halogen::nn
