// FaultInjecting (model/fault_injecting.h) on its own, and the typed
// injected-fault marker of ResourceError (model/types.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "model/fault_injecting.h"

namespace streamcheck {
namespace {

TEST(FaultInjecting, ArmedFaultFiresAtTheNthPointOnceWithTheMarker) {
  FaultInjecting faults;
  faults.arm_fault(1);
  EXPECT_FALSE(faults.fault_at("create_event"));
  const auto fault = faults.fault_at("record_event");
  ASSERT_TRUE(fault);
  EXPECT_TRUE(fault->injected);
  EXPECT_EQ(fault->kind, ErrorKind::Driver);
  EXPECT_EQ(fault->to_string(), "driver error: injected fault at record_event");
  EXPECT_FALSE(faults.fault_armed());
  EXPECT_FALSE(faults.fault_at("wait_event"));
  EXPECT_EQ(faults.faults_fired(), 1u);
  EXPECT_EQ(faults.calls(), 3u);
}

TEST(FaultInjecting, ExploredFaultsAskTheDecisionOnlyWhileTheBudgetLasts) {
  std::vector<bool> answers{false, true, true, true};
  std::size_t asked = 0;
  FaultInjecting faults(2, [&] { return answers[asked++]; });
  std::uint32_t fired = 0;
  for (int i = 0; i < 6; ++i) fired += faults.fault_at("synchronize_stream") ? 1 : 0;
  EXPECT_EQ(fired, 2u);
  EXPECT_EQ(asked, 3u);  // no, yes, yes: then the budget of 2 is spent
  EXPECT_EQ(faults.faults_fired(), 2u);
}

TEST(FaultInjecting, AnArmedFaultTakesPrecedenceOverExploration) {
  std::size_t asked = 0;
  FaultInjecting faults(1, [&] {
    ++asked;
    return false;
  });
  faults.arm_fault(0);
  EXPECT_TRUE(faults.fault_at("alloc_async"));
  EXPECT_EQ(asked, 0u);
  EXPECT_FALSE(faults.fault_at("alloc_async"));
  EXPECT_EQ(asked, 1u);
}

TEST(ResourceErrorMarker, WrappingKeepsTheInjectedMarkerAndOnlyThat) {
  const auto wrapped =
      ResourceError::driver_caused_by("Resource::allocate: alloc_async", ResourceError::injected_fault("alloc_async"));
  EXPECT_TRUE(wrapped.injected);
  EXPECT_EQ(wrapped.message, "Resource::allocate: alloc_async: injected fault at alloc_async");
  const auto real = ResourceError::driver_caused_by("Resource::allocate: alloc_async",
                                                    ResourceError::driver("cuMemAllocFromPoolAsync: out of memory"));
  EXPECT_FALSE(real.injected);
  EXPECT_FALSE(ResourceError::driver("injected fault at alloc_async").injected);  // text is not the marker
}

}  // namespace
}  // namespace streamcheck
