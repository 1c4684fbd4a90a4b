#include "train/load.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.h"
#include "graph/feature_normalize.h"
#include "train/collective_error.h"

namespace halogen::train {

namespace {

// splitmix64's finaliser: a well-mixed 64-bit value of x.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The fingerprint of one exchanged row: which exchange (kind), sender, receiver, position in the segment, the
// row's global id and degree. Sums of these (mod 2^64) over the rows sent to a part and over the rows it expects
// agree exactly when the two lists agree (up to a 2^-64 chance).
uint64_t row_hash(uint64_t kind, uint64_t from, uint64_t to, uint64_t k, uint64_t gid, uint64_t degree) {
  uint64_t h = mix64(kind);
  for (uint64_t v : {from, to, k, gid, degree}) h = mix64(h ^ v);
  return h;
}

// A uint64 as four 16-bit limbs in int64 slots: an int64 allreduce_sum of limbs cannot overflow (ranks x 2^16),
// and from_limbs gives back the sum of the ranks' values mod 2^64.
void to_limbs(uint64_t x, int64_t* limbs) {
  for (int i = 0; i < 4; ++i) limbs[i] = static_cast<int64_t>((x >> (16 * i)) & 0xffffu);
}
uint64_t from_limbs(const int64_t* limbs) {
  uint64_t x = 0;
  for (int i = 0; i < 4; ++i) x += static_cast<uint64_t>(limbs[i]) << (16 * i);
  return x;
}

// What part `from` sends along one plan (send side) and what part `to` expects along its plan (receive side),
// accumulated per peer: counts and row hashes.
struct PlanSums {
  std::vector<int64_t> send_count, recv_count;
  std::vector<uint64_t> send_hash, recv_hash;
  explicit PlanSums(int parts) : send_count(parts), recv_count(parts), send_hash(parts), recv_hash(parts) {}
};

template <typename SendRow, typename RecvRow>
void add_plan(PlanSums& sums, uint64_t kind, int self, const graph::HaloPlan& plan, SendRow send_row,
              RecvRow recv_row) {
  const int parts = static_cast<int>(sums.send_count.size());
  for (int q = 0; q < parts; ++q) {
    const int64_t begin = plan.send_offsets[q], end = plan.send_offsets[q + 1];
    sums.send_count[q] += end - begin;
    for (int64_t i = begin; i < end; ++i) {
      const auto [gid, degree] = send_row(plan.send_idx[i]);
      sums.send_hash[q] += row_hash(kind, static_cast<uint64_t>(self), static_cast<uint64_t>(q),
                                    static_cast<uint64_t>(i - begin), static_cast<uint64_t>(gid),
                                    static_cast<uint64_t>(degree));
    }
    const int64_t rbegin = plan.recv_offsets[q], rend = plan.recv_offsets[q + 1];
    sums.recv_count[q] += rend - rbegin;
    for (int64_t k = rbegin; k < rend; ++k) {
      const auto [gid, degree] = recv_row(k);
      sums.recv_hash[q] += row_hash(kind, static_cast<uint64_t>(q), static_cast<uint64_t>(self),
                                    static_cast<uint64_t>(k - rbegin), static_cast<uint64_t>(gid),
                                    static_cast<uint64_t>(degree));
    }
  }
}

// The shards of one partition must agree with each other, which no shard can check alone: every vertex is owned
// by exactly one shard, and every exchange (the static halo plan, each snapshot's, each link step's fetch plan)
// delivers to part q exactly the rows q's shard lists, in its order, with the degrees it records. Shards mixed
// from two partitions, or edited, would otherwise fail inside MPI or train on wrong neighbours. O(edges of the
// plans) hashing and two allreduces of O(P) integers.
void check_shards_agree(comm::Communicator& comm, const std::string& dir, const graph::Shard& shard) {
  const int parts = comm.size(), self = comm.rank();
  PlanSums sums(parts);
  add_plan(sums, 0, self, shard.plan,
           [&](int32_t i) { return std::pair<int64_t, int64_t>(shard.owned_gid[i], shard.degree_owned[i]); },
           [&](int64_t k) { return std::pair<int64_t, int64_t>(shard.halo_gid[k], shard.degree_halo[k]); });
  for (size_t t = 0; t < shard.snapshots.size(); ++t) {
    const graph::ShardSnapshot& snap = shard.snapshots[t];
    add_plan(sums, 1 + t, self, snap.plan,
             [&](int32_t i) { return std::pair<int64_t, int64_t>(shard.owned_gid[i], snap.degree_owned[i]); },
             [&](int64_t k) {
               return std::pair<int64_t, int64_t>(shard.halo_gid[snap.halo_rows[k]], snap.degree_halo[k]);
             });
  }
  for (size_t s = 0; s < shard.link_steps.size(); ++s) {
    const graph::ShardLinkStep& step = shard.link_steps[s];
    add_plan(sums, (uint64_t(1) << 32) + s, self, step.plan,
             [&](int32_t i) { return std::pair<int64_t, int64_t>(shard.owned_gid[i], 0); },
             [&](int64_t k) { return std::pair<int64_t, int64_t>(step.fetched_gid[k], 0); });
  }
  // Ownership: the owned gids of all shards hash to the same sum as 0..N-1 (each rank hashes a slice of it).
  const int64_t n = shard.global_num_nodes;
  uint64_t owned_hash = 0, slice_hash = 0;
  for (int64_t gid : shard.owned_gid) owned_hash += mix64(static_cast<uint64_t>(gid));
  const int64_t slice_begin = n / parts * self + std::min<int64_t>(self, n % parts);
  const int64_t slice_end = slice_begin + n / parts + (self < n % parts ? 1 : 0);
  for (int64_t gid = slice_begin; gid < slice_end; ++gid) slice_hash += mix64(static_cast<uint64_t>(gid));

  // [count, 4 hash limbs] of what this rank sends to each part, then the ownership and split sums.
  constexpr int kRow = 5;
  std::vector<int64_t> all(static_cast<size_t>(kRow) * parts + 9 + 3 + 1, 0);
  for (int q = 0; q < parts; ++q) {
    all[static_cast<size_t>(q) * kRow] = sums.send_count[q];
    to_limbs(sums.send_hash[q], &all[static_cast<size_t>(q) * kRow + 1]);
  }
  int64_t* tail = all.data() + static_cast<size_t>(kRow) * parts;
  tail[0] = shard.num_owned();
  to_limbs(owned_hash, tail + 1);
  to_limbs(slice_hash, tail + 5);
  for (int i = 0; i < 3; ++i) tail[9 + i] = (shard.splits_present >> i) & 1;
  tail[12] = static_cast<int64_t>(shard.snapshots.size());
  comm.allreduce_sum(all.data(), static_cast<int64_t>(all.size()));

  run_collectively(comm, [&] {
    const std::string path = io::shard_path(dir, self);
    const int64_t expected_count = all[static_cast<size_t>(self) * kRow];
    const uint64_t expected_hash = from_limbs(&all[static_cast<size_t>(self) * kRow + 1]);
    int64_t count = 0;
    uint64_t hash = 0;
    for (int q = 0; q < parts; ++q) {
      count += sums.recv_count[q];
      hash += sums.recv_hash[q];
    }
    HALOGEN_USER_CHECK(tail[12] == static_cast<int64_t>(shard.snapshots.size()) * parts,
                       "%s: /snapshots: %zu snapshots, other shards of %s have another number (shards of "
                       "different partitions?)", path.c_str(), shard.snapshots.size(), dir.c_str());
    HALOGEN_USER_CHECK(count == expected_count,
                       "%s: /halo: the shard expects %lld rows from its peers in all, their /send/idx send it %lld "
                       "(shards of different partitions, or damaged)",
                       path.c_str(), (long long)count, (long long)expected_count);
    HALOGEN_USER_CHECK(hash == expected_hash,
                       "%s: /halo/gid: the halo rows (their global ids, order or /degree/halo) are not the rows "
                       "the other shards send this part (their /send/idx, /owned/gid, /degree/owned): shards of "
                       "different partitions, or damaged", path.c_str());
    static const char* kSplits[] = {"/split/train", "/split/valid", "/split/test"};
    for (int i = 0; i < 3; ++i)
      HALOGEN_USER_CHECK(tail[9 + i] == 0 || tail[9 + i] == parts || ((shard.splits_present >> i) & 1),
                         "%s: %s: missing, and other shards of %s have it", path.c_str(), kSplits[i], dir.c_str());
  });
  run_collectively(comm, [&] {
    if (self != 0) return;
    HALOGEN_USER_CHECK(tail[0] == n && from_limbs(tail + 1) == from_limbs(tail + 5),
                       "%s: the shards' /owned/gid do not hold each of the %lld vertices exactly once (%lld owned "
                       "in all; a vertex in two shards or in none)", dir.c_str(), (long long)n, (long long)tail[0]);
  });
}

}  // namespace

RankInput load_rank_input(comm::Communicator& comm, const std::string& dir, bool row_normalize) {
  RankInput input;
  run_collectively(
      comm,
      [&] {
        input.meta = io::read_partition_meta(dir);
        HALOGEN_USER_CHECK(input.meta.num_parts == comm.size(),
                           "%s: the partition has %d parts but the job has %d ranks (run with mpirun -np %d, or "
                           "partition again with -k %d)",
                           dir.c_str(), input.meta.num_parts, comm.size(), input.meta.num_parts, comm.size());
      },
      Report::lowest_failing_rank);
  run_collectively(comm, [&] {
    input.shard = io::read_shard(dir, comm.rank());
    // A shard's class count sizes the output layer: it must be meta.json's (one label of 33554432 with a
    // num_classes attribute to match would otherwise make each rank allocate gigabytes).
    HALOGEN_USER_CHECK(input.shard.num_classes == input.meta.num_classes,
                       "%s: attribute num_classes is %d, meta.json says %d", io::shard_path(dir, comm.rank()).c_str(),
                       input.shard.num_classes, input.meta.num_classes);
    if (row_normalize)
      graph::row_normalize(input.shard.features, input.shard.num_owned(), input.shard.num_features);
  });
  check_shards_agree(comm, dir, input.shard);
  return input;
}

}  // namespace halogen::train
