// --comm auto's choice (comm/device_comm.h choose_device_comm) from the ranks' GPU UUIDs, on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "comm/device_comm.h"

using halogen::comm::choose_device_comm;

TEST(DeviceCommChoice, NcclWhenEveryRankHasItsOwnGpu) {
  EXPECT_EQ(choose_device_comm({"gpu-a"}), "nccl");  // one rank
  EXPECT_EQ(choose_device_comm({"gpu-a", "gpu-b"}), "nccl");
  EXPECT_EQ(choose_device_comm({"gpu-d", "gpu-a", "gpu-c", "gpu-b"}), "nccl");  // any order
}

TEST(DeviceCommChoice, HostStagedMpiWhenAnyTwoRanksShareAGpu) {
  EXPECT_EQ(choose_device_comm({"gpu-a", "gpu-a"}), "mpi");  // two ranks on a machine with one GPU
  EXPECT_EQ(choose_device_comm({"gpu-a", "gpu-b", "gpu-c", "gpu-a"}), "mpi");  // non-adjacent duplicate
  EXPECT_EQ(choose_device_comm({"gpu-a", "gpu-b", "gpu-a", "gpu-b"}), "mpi");  // 4 ranks on 2 GPUs
}

TEST(DeviceCommChoice, SameAnswerOnEveryRank) {
  // Every rank sees the same allgathered list, in rank order; the answer must not depend on the caller.
  const std::vector<std::string> ids = {"u3", "u1", "u2", "u1"};
  std::vector<std::string> rotated = ids;
  for (size_t r = 0; r < ids.size(); ++r) {
    EXPECT_EQ(choose_device_comm(rotated), "mpi");
    std::rotate(rotated.begin(), rotated.begin() + 1, rotated.end());
  }
}
