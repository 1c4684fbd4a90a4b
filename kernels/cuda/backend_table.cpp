// The ops and device runtime of the CUDA backend's table (kernels/backend.h).
#include "kernels/cuda/device.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/profiling.h"

namespace halogen::kernels::cuda {

void fill_backend_table(CudaBackend& table) {
  table.abi_version = kCudaBackendAbiVersion;
#define HALOGEN_OP(return_type, name, dispatch_device, parameters, arguments) table.name = &cuda::name;
#include "kernels/op_list.h"
#undef HALOGEN_OP
  table.release_sparse_cache = &cuda::release_sparse_cache;

  table.usable_device_count = &halogen::cuda::usable_device_count;
  table.initialise_device = &halogen::cuda::initialise_device;
  table.device_description = &halogen::cuda::device_description;
  table.device_uuid = &halogen::cuda::device_uuid;
  table.free_device_memory_bytes = &halogen::cuda::free_device_memory_bytes;
  table.create_stream = &halogen::cuda::create_stream;
  table.destroy_stream = &halogen::cuda::destroy_stream;
  table.synchronize_stream = &halogen::cuda::synchronize_stream;
  table.create_event = &halogen::cuda::create_event;
  table.destroy_event = &halogen::cuda::destroy_event;
  table.record_event = &halogen::cuda::record_event;
  table.elapsed_ms = &halogen::cuda::elapsed_ms;
  table.push_range = &halogen::cuda::push_range;
  table.pop_range = &halogen::cuda::pop_range;
  table.measure_copy_bandwidth_gbs = &halogen::cuda::measure_copy_bandwidth_gbs;
  table.set_gemm_tf32 = &cuda::set_gemm_tf32;
}

}  // namespace halogen::kernels::cuda
