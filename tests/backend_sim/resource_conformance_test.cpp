// The conformance suites (tests/conformance/) on the simulated backend: every
// case runs against the happens-before simulator, whose checker and value
// oracle are the problems a case expects none of.
#include <memory>
#include <optional>
#include <string>

#include "backend_sim/device_model.h"
#include "backend_sim/schedule.h"
#include "backend_sim/sim_backend.h"
#include "backend_sim/sim_guard_memory.h"
#include "tests/conformance/fixture.h"
#include "tests/conformance/memory_resource_suite.h"
#include "tests/conformance/recorder_suite.h"
#include "tests/conformance/resource_suite.h"

namespace streamcheck::conformance {

/// A simulated device with a fixed schedule seed; always available.
class SimDevice {
 public:
  using BackendType = sim::SimBackend;
  std::optional<std::string> unavailable() const { return std::nullopt; }
  sim::SimBackend& backend() { return backend_; }

 private:
  sim::RandomChooser chooser_{1};
  sim::DeviceModel model_{chooser_};
  sim::SimBackend backend_{model_};
};
static_assert(Device<SimDevice>);

/// The debug tier's device work in the simulator: the race checker's shadow
/// memory.
struct SimGuard {
  using Type = sim::SimGuardMemory;
  static std::unique_ptr<Type> make(sim::SimBackend& backend) { return std::make_unique<Type>(backend); }
};

namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(SimResource, ResourceSuite, TrackingStacks<SimDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimRecorder, RecorderSuite, TrackingStacks<SimDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimMemoryResource, MemoryResourceSuite, AllStacks<SimDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimPoolResource, ResourceSuite, PoolStacks<SimDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimPoolRecorder, RecorderSuite, PoolStacks<SimDevice>);
INSTANTIATE_TYPED_TEST_SUITE_P(SimPoolMemoryResource, MemoryResourceSuite, PoolStacks<SimDevice>);
using SimGuardStacks = GuardStacks<SimDevice, SimGuard>;
INSTANTIATE_TYPED_TEST_SUITE_P(SimGuardMemoryResource, MemoryResourceSuite, SimGuardStacks);
using SimGuardTrackingStacks = GuardTrackingStacks<SimDevice, SimGuard>;
INSTANTIATE_TYPED_TEST_SUITE_P(SimGuardRecorder, RecorderSuite, SimGuardTrackingStacks);

}  // namespace
}  // namespace streamcheck::conformance
