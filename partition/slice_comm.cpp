// MPI steps over the vertex slices of --method ptscotch (partition/slice_comm.h).
#include "partition/slice_comm.h"

#include <string>

#include "core/error.h"
#include "core/fail_together.h"

namespace halogen::partition {

namespace {

// The MPI_Comm side of run_collectively (core/fail_together.h).
class MpiVote final : public Vote {
 public:
  explicit MpiVote(MPI_Comm comm) : comm_(comm) {
    MPI_CHECK(MPI_Comm_rank(comm, &rank_));
    MPI_CHECK(MPI_Comm_size(comm, &size_));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void max(double* values, int count) override {
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, comm_));
  }
  void broadcast(std::string& text, int root) override {
    int64_t length = static_cast<int64_t>(text.size());
    MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm_));
    text.resize(static_cast<size_t>(length));
    MPI_CHECK(MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, root, comm_));
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

void collectively(MPI_Comm comm, const std::function<void()>& step) {
  MpiVote vote(comm);
  run_collectively(vote, step, Report::lowest_on_every_rank);
}

// The remote columns of a slice: sorted, distinct.
std::vector<int64_t> slice_ghosts(const GraphSlice& slice) {
  std::vector<int64_t> ghosts;
  for (int64_t v : slice.indices)
    if (v < slice.begin || v >= slice.end) ghosts.push_back(v);
  std::sort(ghosts.begin(), ghosts.end());
  ghosts.erase(std::unique(ghosts.begin(), ghosts.end()), ghosts.end());
  return ghosts;
}

// One word per ghost (sorted, distinct), in the order of `ghosts`, answered by the owner of its slice
// (`bounds`) as answer(row of its slice).
std::vector<int64_t> ask_owners(MPI_Comm comm, const std::vector<int64_t>& ghosts, const std::vector<int64_t>& bounds,
                                int64_t slice_begin, const std::function<int64_t(int64_t)>& answer) {
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int64_t> ask_offsets(size + 1, 0), asked_offsets, reply_offsets;
  for (int r = 0; r <= size; ++r)
    ask_offsets[r] = std::lower_bound(ghosts.begin(), ghosts.end(), bounds[r]) - ghosts.begin();
  const std::vector<int64_t> asked = exchange(comm, ghosts, ask_offsets, &asked_offsets);
  std::vector<int64_t> answers(asked.size());
  for (size_t k = 0; k < asked.size(); ++k) answers[k] = answer(asked[k] - slice_begin);
  return exchange(comm, answers, asked_offsets, &reply_offsets);
}

// Broadcasts process 0's `words` (any length: int counts, so in blocks).
void broadcast_words(MPI_Comm comm, std::vector<int64_t>& words) {
  int64_t count = static_cast<int64_t>(words.size());
  MPI_CHECK(MPI_Bcast(&count, 1, MPI_INT64_T, 0, comm));
  words.resize(static_cast<size_t>(count));
  constexpr int64_t kBlock = int64_t{1} << 26;
  for (int64_t at = 0; at < count; at += kBlock)
    MPI_CHECK(MPI_Bcast(words.data() + at, static_cast<int>(std::min(kBlock, count - at)), MPI_INT64_T, 0, comm));
}

}  // namespace halogen::partition
