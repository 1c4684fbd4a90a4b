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
    // A shard's class count sizes the output layer: it must be meta.json's (one label of 33554432 with a
    // num_classes attribute to match would otherwise make each rank allocate gigabytes).
    HALOGEN_USER_CHECK(input.shard.num_classes == input.meta.num_classes,
                       "%s: attribute num_classes is %d, meta.json says %d", io::shard_path(dir, comm.rank()).c_str(),
                       input.shard.num_classes, input.meta.num_classes);
    if (row_normalize)
      graph::row_normalize(input.shard.features, input.shard.num_owned(), input.shard.num_features);
  });
  return input;
}

}  // namespace halogen::train
