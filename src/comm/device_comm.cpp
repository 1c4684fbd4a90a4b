#include "comm/device_comm.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/error.h"
#include "kernels/backend.h"

namespace halogen::comm {

std::unique_ptr<Communicator> make_device_comm(const std::string& kind) {
  HALOGEN_USER_CHECK(kind == "nccl" || kind == "mpi", "--comm %s: expected nccl or mpi", kind.c_str());
  return kernels::cuda_backend().make_device_comm(kind);
}

std::string choose_device_comm(const std::vector<std::string>& device_ids) {
  std::vector<std::string> sorted = device_ids;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() ? "nccl" : "mpi";
}

std::string resolve_device_comm(const std::string& requested, const std::string& device_id) {
  if (!requested.empty() && requested != "auto") return requested;
  int size = 1;
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  constexpr int kIdBytes = 64;  // a UUID is 32 hex digits; longer ids are cut (they only need to differ)
  char mine[kIdBytes] = {};
  std::memcpy(mine, device_id.data(), std::min<size_t>(device_id.size(), kIdBytes - 1));
  std::vector<char> all(static_cast<size_t>(size) * kIdBytes);
  MPI_CHECK(MPI_Allgather(mine, kIdBytes, MPI_CHAR, all.data(), kIdBytes, MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> ids;
  for (int r = 0; r < size; ++r) ids.emplace_back(all.data() + static_cast<size_t>(r) * kIdBytes);
  return choose_device_comm(ids);
}

}  // namespace halogen::comm
