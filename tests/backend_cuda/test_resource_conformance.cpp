// The conformance suites (tests/conformance/) on real CUDA streams (label
// `gpu`): the GPU's stamp kernels are the problems a case expects none of.
// Without a GPU every case reports Skipped.
#include <memory>
#include <stdexcept>

#include "backend_cuda/cuda_backend.h"
#include "backend_cuda/guard_memory.h"
#include "tests/backend_cuda/gpu_device.h"
#include "tests/conformance/fixture.h"
#include "tests/conformance/memory_resource_suite.h"
#include "tests/conformance/recorder_suite.h"
#include "tests/conformance/resource_suite.h"

namespace streamcheck::conformance {
namespace {

using cuda::GpuDevice;
static_assert(Device<GpuDevice>);

/// The debug tier's device work on the GPU: cuMemsetD8Async fills and the
/// counting kernel (backend_cuda/guard_memory.h).
struct CudaGuard {
  using Type = cuda::CudaGuardMemory;
  static std::unique_ptr<Type> make(cuda::CudaBackend& backend) {
    auto memory = Type::create(backend);
    if (!memory) throw std::runtime_error("CudaGuardMemory::create: " + memory.error().to_string());
    return std::move(memory).value();
  }
};
using GpuGuardStacks = GuardStacks<GpuDevice, CudaGuard>;

INSTANTIATE_TYPED_TEST_SUITE_P(GpuResource, ResourceSuite, TrackingStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuRecorder, RecorderSuite, TrackingStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuMemoryResource, MemoryResourceSuite, AllStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuPoolResource, ResourceSuite, PoolStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuPoolRecorder, RecorderSuite, PoolStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuPoolMemoryResource, MemoryResourceSuite, PoolStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuGuardMemoryResource, MemoryResourceSuite, GpuGuardStacks);
using GpuGuardTrackingStacks = GuardTrackingStacks<GpuDevice, CudaGuard>;
INSTANTIATE_TYPED_TEST_SUITE_P(GpuGuardRecorder, RecorderSuite, GpuGuardTrackingStacks);

}  // namespace
}  // namespace streamcheck::conformance
