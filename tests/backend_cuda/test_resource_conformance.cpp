// The conformance suites (tests/conformance/) on real CUDA streams (label
// `gpu`): the GPU's stamp kernels are the problems a case expects none of.
// Without a GPU every case reports Skipped.
#include "backend_cuda/cuda_backend.h"
#include "tests/backend_cuda/gpu_device.h"
#include "tests/conformance/fixture.h"
#include "tests/conformance/memory_resource_suite.h"
#include "tests/conformance/recorder_suite.h"
#include "tests/conformance/resource_suite.h"

namespace streamcheck::conformance {
namespace {

using cuda::GpuDevice;
static_assert(Device<GpuDevice>);

INSTANTIATE_TYPED_TEST_SUITE_P(GpuResource, ResourceSuite, TrackingStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuRecorder, RecorderSuite, TrackingStacks<GpuDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(GpuMemoryResource, MemoryResourceSuite, AllStacks<GpuDevice>);

}  // namespace
}  // namespace streamcheck::conformance
