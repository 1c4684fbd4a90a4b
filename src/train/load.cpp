#include "train/load.h"

#include "core/error.h"
#include "graph/feature_normalize.h"
#include "train/collective_error.h"

namespace halogen::train {

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
    if (row_normalize)
      graph::row_normalize(input.shard.features, input.shard.num_owned(), input.shard.num_features);
  });
  return input;
}

}  // namespace halogen::train
