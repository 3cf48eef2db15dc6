// The CUDA backend with several devices (R13; label `gpu`). On one GPU every
// trace device shares it (DevicePlacement::OneGpu) and the backend refuses
// what CUDA would refuse on separate GPUs; on two (GpuPerDevice) each
// device gets its own GPU, its own pool and its own kernels, peer copies
// read across them, events order them, and the driver itself refuses a
// record of another device's event. Without a GPU every test reports
// Skipped; the two-GPU tests report Skipped, saying how many GPUs there
// are, on a machine with one.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backend_cuda/cuda_backend.h"
#include "tests/backend_cuda/gpu_device.h"

namespace streamcheck::cuda {
namespace {

constexpr std::uint64_t kBytes = 1 << 20;

/// Why the two-GPU tests cannot run here, or nullopt.
std::optional<std::string> fewer_than_two_gpus() {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (!d) return "no usable GPU: " + why;
  if (d->device_count() < 2)
    return "needs two GPUs (one per trace device, DevicePlacement::GpuPerDevice); this machine has " +
           std::to_string(d->device_count());
  return std::nullopt;
}

class Devices : public ::testing::TestWithParam<DevicePlacement> {
 protected:
  void SetUp() override {
    if (GetParam() == DevicePlacement::GpuPerDevice)
      if (auto why = fewer_than_two_gpus()) GTEST_SKIP() << *why;
    CudaBackendOptions o;
    o.placement = GetParam();
    device = std::make_unique<GpuDevice>(o);
    if (auto why = device->unavailable()) GTEST_SKIP() << *why;
    backend = &device->backend();
    s0 = backend->add_stream("s0", StreamKind::NonBlocking, 0);
    s1 = backend->add_stream("s1", StreamKind::NonBlocking, 1);
  }
  StreamRef ref(StreamId s) const { return *backend->resolve_stream(s); }
  CudaBackend::Event event_of(DeviceNumber d) {
    backend->set_current_device(d);
    auto e = backend->create_event();
    EXPECT_TRUE(e.ok());
    return std::move(e).value();
  }

  std::unique_ptr<GpuDevice> device;
  CudaBackend* backend = nullptr;
  StreamId s0{}, s1{};
};

TEST_P(Devices, EachDeviceRunsWhereThePlacementSays) {
  auto g0 = backend->gpu_of_stream(s0), g1 = backend->gpu_of_stream(s1);
  ASSERT_TRUE(g0.ok() && g1.ok());
  if (GetParam() == DevicePlacement::GpuPerDevice) {
    EXPECT_EQ(g0.value(), 0);
    EXPECT_EQ(g1.value(), 1);
    EXPECT_EQ(backend->gpus_in_use(), 2u);
    EXPECT_NE(backend->device_description().find("GPU 1 (device 1)"), std::string::npos)
        << backend->device_description();
  } else {
    EXPECT_EQ(g0.value(), g1.value());
    EXPECT_EQ(backend->gpus_in_use(), 1u);
  }
}

TEST_P(Devices, ARecordOfAnotherDevicesEventIsADriverError) {
  // R13d: the cuCascade bug of examples/57: the event was made with device 0
  // current, the stream is device 1's.
  CudaBackend::Event e0 = event_of(0);
  const Status refused = backend->record_event(e0, ref(s1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::Driver) << refused.error();
  if (GetParam() == DevicePlacement::GpuPerDevice) {  // the driver's own refusal
    EXPECT_NE(refused.error().to_string().find("CUDA_ERROR"), std::string::npos) << refused.error();
  }
  // Its own device's stream records it; another device's stream may wait on it (R13b).
  ASSERT_TRUE(backend->record_event(e0, ref(s0)).ok());
  ASSERT_TRUE(backend->wait_event(ref(s1), e0).ok());
  CudaBackend::Event e1 = event_of(1);
  ASSERT_TRUE(backend->record_event(e1, ref(s1)).ok());
  ASSERT_TRUE(backend->synchronize_event(e1).ok());
}

TEST_P(Devices, ACrossDeviceWaitOrdersAPeerCopy) {
  // Device 0 writes A (held back 5 ms); device 1 reads it (a peer copy's
  // read, examples/59-60): after a cross-device wait it sees the write.
  auto a = backend->alloc_async(kBytes, ref(s0));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(backend->synchronize_stream(ref(s0)).ok());
  backend->force_delays({{0, 1}}, 5'000'000);  // s0's op 1: the write below
  backend->launch(ref(s0), {KernelAccess{a.value(), kBytes, Access::Write, {}}}, "produce");
  CudaBackend::Event e0 = event_of(0);
  ASSERT_TRUE(backend->record_event(e0, ref(s0)).ok());
  ASSERT_TRUE(backend->wait_event(ref(s1), e0).ok());
  backend->launch(ref(s1), {KernelAccess{a.value(), kBytes, Access::Read, {}}}, "pull");
  CudaBackend::Event e1 = event_of(1);
  ASSERT_TRUE(backend->record_event(e1, ref(s1)).ok());
  ASSERT_TRUE(backend->wait_event(ref(s0), e1).ok());
  ASSERT_TRUE(backend->free_async(a.value(), ref(s0)).ok());
  backend->drain();
  EXPECT_EQ(backend->mismatches_total(), 0u);
  EXPECT_TRUE(backend->new_problems().empty());
}

TEST_P(Devices, WithoutTheWaitThePeerReadSeesTheOldData) {
  auto a = backend->alloc_async(kBytes, ref(s0));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(backend->synchronize_stream(ref(s0)).ok());
  backend->force_delays({{0, 1}}, 5'000'000);
  backend->launch(ref(s0), {KernelAccess{a.value(), kBytes, Access::Write, {}}}, "produce");
  backend->launch(ref(s1), {KernelAccess{a.value(), kBytes, Access::Read, {}}}, "pull without a wait");
  backend->drain();
  EXPECT_GT(backend->mismatches_total(), 0u);
  ASSERT_TRUE(backend->free_async(a.value(), ref(s0)).ok());
}

TEST_P(Devices, EachDeviceAllocatesFromItsOwnPool) {
  // Per-device pools: a block freed on device 1 and allocated again there
  // (same stream: stream order suffices, R7) while device 0's pool serves
  // its own; every byte checked at drain.
  for (int round = 0; round < 3; ++round) {
    auto on1 = backend->alloc_async(kBytes, ref(s1));
    auto on0 = backend->alloc_async(kBytes, ref(s0));
    ASSERT_TRUE(on1.ok() && on0.ok());
    backend->launch(ref(s1), {KernelAccess{on1.value(), kBytes, Access::Write, {}}}, "fill");
    ASSERT_TRUE(backend->free_async(on1.value(), ref(s1)).ok());
    ASSERT_TRUE(backend->free_async(on0.value(), ref(s0)).ok());
  }
  backend->drain();
  EXPECT_EQ(backend->mismatches_total(), 0u);
  EXPECT_TRUE(backend->new_problems().empty());
}

TEST(DevicesOnGpus, ADeviceBeyondTheMachinesGpusIsAClearError) {
  std::string why;
  const Driver* d = Driver::get(&why);
  if (!d) GTEST_SKIP() << "no usable GPU: " << why;
  CudaBackendOptions o;
  o.placement = DevicePlacement::GpuPerDevice;
  GpuDevice device(o);
  if (auto unavailable = device.unavailable()) GTEST_SKIP() << *unavailable;
  const auto beyond = static_cast<DeviceNumber>(d->device_count());
  try {
    device.backend().add_stream("far", StreamKind::NonBlocking, beyond);
    ADD_FAILURE() << "a stream of device " << beyond << " was made on a machine of " << d->device_count() << " GPU(s)";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("this machine has " + std::to_string(d->device_count()) + " GPU"),
              std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Placements, Devices, ::testing::Values(DevicePlacement::OneGpu, DevicePlacement::GpuPerDevice),
                         [](const auto& info) {
                           return info.param == DevicePlacement::OneGpu ? std::string("OneGpu")
                                                                        : std::string("GpuPerDevice");
                         });

}  // namespace
}  // namespace streamcheck::cuda
