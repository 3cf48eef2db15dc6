// SimBackend: injected faults (armed and explored) and event ownership.
#include "backend_sim/sim_backend.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sim_test_util.h"

namespace streamcheck::sim::test {
namespace {

bool injected(const ResourceError& e, const std::string& call) {
  return e.injected && e.kind == ErrorKind::Driver && e.message == ResourceError::injected_fault(call).message;
}

TEST(SimBackendFaults, ArmedFaultFiresAtExactlyTheNthCallAndOnce) {
  ReplayChooser c("-");
  DeviceModel m(c);
  SimBackend b(m);
  const auto s = *b.resolve_stream(b.add_stream("s"));
  b.arm_fault(2);
  EXPECT_TRUE(b.fault_armed());
  auto e = b.create_event();  // call 0
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(b.record_event(e.value(), s).ok());  // call 1
  const auto failed = b.synchronize_stream(s);     // call 2
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(injected(failed.error(), "synchronize_stream")) << failed.error();
  EXPECT_FALSE(b.fault_armed());
  EXPECT_TRUE(b.wait_event(s, e.value()).ok());  // call 3: once only
  EXPECT_TRUE(b.synchronize_stream(s).ok());
  EXPECT_EQ(b.faults_fired(), 1u);
  EXPECT_EQ(b.calls(), 5u);
}

TEST(SimBackendFaults, FaultedAllocEnqueuesNothing) {
  ReplayChooser c("-");
  DeviceModel m(c);
  SimBackend b(m);
  const auto s = *b.resolve_stream(b.add_stream());
  b.arm_fault(0);
  const auto a = b.alloc_async(256, s);
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(injected(a.error(), "alloc_async"));
  EXPECT_EQ(m.op_count(s), 0u);
  EXPECT_EQ(m.allocation_count(), 0u);
  const auto again = b.alloc_async(256, s);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(b.free_async(again.value(), s).ok());
  EXPECT_EQ(m.op_count(s), 2u);
}

TEST(SimBackendFaults, DisarmedFaultNeverFires) {
  ReplayChooser c("-");
  DeviceModel m(c);
  SimBackend b(m);
  const auto s = *b.resolve_stream(b.add_stream());
  b.arm_fault(0);
  b.disarm_fault();
  EXPECT_TRUE(b.synchronize_stream(s).ok());
  EXPECT_EQ(b.faults_fired(), 0u);
}

// Three backend calls that enqueue no device work (so device_steps never
// asks): with up to k explored faults, each call is a 2-way choice until k
// faults fired. Schedules = sum_{i<=k} C(3, i).
std::size_t explore_faults(std::uint32_t max_faults, std::vector<std::uint32_t>& fired) {
  fired.clear();
  return explore_all([&](Chooser& c) {
    DeviceModel m(c);
    SimBackend b(m, SimBackendOptions{max_faults, 0});
    const auto s = *b.resolve_stream(b.add_stream());
    (void)b.create_event();
    (void)b.synchronize_stream(s);
    (void)b.create_event();
    fired.push_back(b.faults_fired());
    EXPECT_EQ(m.live_event_count(), 0u);
  });
}

TEST(SimBackendFaults, MaxExploredFaultsMakesFaultsADfsChoice) {
  std::vector<std::uint32_t> fired;
  EXPECT_EQ(explore_faults(0, fired), 1u);
  EXPECT_EQ(fired, (std::vector<std::uint32_t>{0}));
  EXPECT_EQ(explore_faults(1, fired), 4u);  // 1 + 3
  EXPECT_EQ(fired, (std::vector<std::uint32_t>{0, 1, 1, 1}));
  EXPECT_EQ(explore_faults(2, fired), 7u);  // 1 + 3 + 3
  EXPECT_EQ(std::count(fired.begin(), fired.end(), 2u), 3);
  EXPECT_EQ(explore_faults(3, fired), 8u);  // 2^3
}

TEST(SimBackendEvents, EventsAreGivenBackOnDestruction) {
  ReplayChooser c("-");
  DeviceModel m(c);
  SimBackend b(m);
  {
    auto e1 = b.create_event();
    auto e2 = b.create_event();
    ASSERT_TRUE(e1.ok() && e2.ok());
    EXPECT_EQ(b.live_event_count(), 2u);
    SimBackend::Event moved = std::move(e1.value());  // the moved-from owner gives nothing back
    EXPECT_EQ(b.live_event_count(), 2u);
    moved = std::move(e2.value());  // move-assignment gives the old event back
    EXPECT_EQ(b.live_event_count(), 1u);
  }
  EXPECT_EQ(b.live_event_count(), 0u);
  EXPECT_EQ(m.live_event_count(), 0u);
}

TEST(SimBackendEvents, DestroyingAnEventTwiceIsAToolError) {
  ReplayChooser c("-");
  DeviceModel m(c);
  const auto e = m.create_event();
  m.destroy_event(e);
  EXPECT_THROW(m.destroy_event(e), std::logic_error);
  EXPECT_THROW(m.record(e, m.create_stream()), std::logic_error);
}

TEST(SimBackendLaunch, LaunchLetsTheDeviceStepFirst) {
  // launch() calls device_steps(): with one ready head it is a 2-way choice.
  const auto n = explore_all([](Chooser& c) {
    DeviceModel m(c);
    SimBackend b(m);
    const auto s = *b.resolve_stream(b.add_stream());
    const auto p = b.alloc_async(256, s).value();  // nothing ready yet: no choice
    b.launch(s, {wr(p, 256)}, "k");                // {stop, complete the alloc}
    EXPECT_TRUE(b.free_async(p, s).ok());          // heads left: a further choice
    b.drain();
    EXPECT_TRUE(b.new_problems().empty());
  });
  // launch: stop -> free_async sees the alloc ready: stop (1) | alloc, then
  //   stop | kernel (2): 3;
  // launch: alloc done -> free_async: stop | kernel: 2. Total 5.
  EXPECT_EQ(n, 5u);
}

}  // namespace
}  // namespace streamcheck::sim::test
