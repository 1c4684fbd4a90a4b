#pragma once
// MPI steps over the vertex slices of --method ptscotch (partition/graph_slice.h), shared by the partitioner
// (partition/ptscotch_partition.cpp) and its balance (partition/ptscotch_balance.h). Every function is
// collective over `comm` unless it says otherwise.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/check.h"
#include "partition/graph_slice.h"

namespace halogen::partition {

template <typename T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<int64_t>() { return MPI_INT64_T; }
template <>
inline MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }

// Runs `step` on every process: run_collectively (core/fail_together.h) over `comm` with
// Report::lowest_on_every_rank. When it fails on any process (UserError, std::bad_alloc, other
// std::exception), every process throws a UserError with the message of the lowest such rank: all leave
// together, none waits in a later collective, and process 0 can print the one line.
void collectively(MPI_Comm comm, const std::function<void()>& step);

// All-to-all of variable blocks with 64-bit counts: `send` holds the block for rank d at
// [send_offsets[d], send_offsets[d+1]); returns the blocks received, grouped by source rank ascending, and
// their offsets in *recv_offsets (K+1). MPI_Alltoallv takes int counts and displacements, so the blocks go in
// rounds of at most `round_elements` per pair, copied through buffers of K x round_elements.
template <typename T>
std::vector<T> exchange(MPI_Comm comm, const std::vector<T>& send, const std::vector<int64_t>& send_offsets,
                        std::vector<int64_t>* recv_offsets) {
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<int64_t> send_counts(size), recv_counts(size);
  for (int d = 0; d < size; ++d) send_counts[d] = send_offsets[d + 1] - send_offsets[d];
  MPI_CHECK(MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts.data(), 1, MPI_INT64_T, comm));
  recv_offsets->assign(size + 1, 0);
  for (int s = 0; s < size; ++s) (*recv_offsets)[s + 1] = (*recv_offsets)[s] + recv_counts[s];
  std::vector<T> recv(static_cast<size_t>(recv_offsets->back()));

  // At most 64 MiB per buffer: rounds stay cheap however many processes, and int displacements never overflow.
  const int64_t round_elements = std::max<int64_t>(1, (int64_t{64} << 20) / static_cast<int64_t>(sizeof(T)) / size);
  int64_t largest = 0;
  for (int d = 0; d < size; ++d) largest = std::max({largest, send_counts[d], recv_counts[d]});
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &largest, 1, MPI_INT64_T, MPI_MAX, comm));
  const int64_t rounds = (largest + round_elements - 1) / round_elements;
  std::vector<T> send_round, recv_round;
  std::vector<int> scount(size), sdispl(size), rcount(size), rdispl(size);
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t skip = round * round_elements;
    int at = 0;
    for (int d = 0; d < size; ++d) {
      scount[d] = static_cast<int>(std::clamp<int64_t>(send_counts[d] - skip, 0, round_elements));
      sdispl[d] = at;
      at += scount[d];
    }
    send_round.resize(static_cast<size_t>(at));
    for (int d = 0; d < size; ++d)
      std::copy_n(send.begin() + send_offsets[d] + skip * (scount[d] > 0), scount[d], send_round.begin() + sdispl[d]);
    at = 0;
    for (int s = 0; s < size; ++s) {
      rcount[s] = static_cast<int>(std::clamp<int64_t>(recv_counts[s] - skip, 0, round_elements));
      rdispl[s] = at;
      at += rcount[s];
    }
    recv_round.resize(static_cast<size_t>(at));
    MPI_CHECK(MPI_Alltoallv(send_round.data(), scount.data(), sdispl.data(), mpi_type<T>(), recv_round.data(),
                            rcount.data(), rdispl.data(), mpi_type<T>(), comm));
    for (int s = 0; s < size; ++s)
      std::copy_n(recv_round.begin() + rdispl[s], rcount[s], recv.begin() + (*recv_offsets)[s] + skip);
  }
  return recv;
}

// The remote columns of a slice: sorted, distinct.
std::vector<int64_t> slice_ghosts(const GraphSlice& slice);

// One word per ghost (sorted, distinct), in the order of `ghosts`, answered by the owner of its slice
// (`bounds`) as answer(row of its slice).
std::vector<int64_t> ask_owners(MPI_Comm comm, const std::vector<int64_t>& ghosts, const std::vector<int64_t>& bounds,
                                int64_t slice_begin, const std::function<int64_t(int64_t)>& answer);

// Broadcasts process 0's `words` (any length: int counts, so in blocks).
void broadcast_words(MPI_Comm comm, std::vector<int64_t>& words);

}  // namespace halogen::partition
