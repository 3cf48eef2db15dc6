// Seed 002's other resources: the budget decorator (exact OutOfBudget,
// forwarding, P7) and the non-tracking resource.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "model/budget_resource.h"
#include "model/launch_recorder.h"
#include "model/non_tracking_resource.h"
#include "model/resource.h"
#include "tests/model/sim_fixture.h"

namespace streamcheck {
namespace {

using Inner = Resource<sim::SimBackend>;
using Budget = BudgetResource<Inner>;
using Direct = NonTrackingResource<sim::SimBackend>;

class BudgetTest : public ::testing::Test {
 protected:
  testing::SimEnv env;
  Inner inner{env.backend};
  Budget budget{inner, 1000};
};

TEST_F(BudgetTest, RefusalReportsExactRequestAndRemaining) {
  auto a = budget.allocate(600, env.s0);
  ASSERT_TRUE(a.ok());
  const auto calls = env.backend.calls();
  auto b = budget.allocate(500, env.s0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::OutOfBudget);
  EXPECT_EQ(b.error().requested, 500u);
  EXPECT_EQ(b.error().remaining, 400u);
  EXPECT_EQ(inner.live_bytes(), 600u);
  EXPECT_EQ(inner.live_block_count(), 1u);
  EXPECT_EQ(env.backend.calls(), calls) << "refused before any backend call";
}

TEST_F(BudgetTest, ExactFillThenZeroRemaining) {
  ASSERT_TRUE(budget.allocate(600, env.s0).ok());
  ASSERT_TRUE(budget.allocate(400, env.s1).ok()) << "the limit itself is allowed";
  EXPECT_EQ(budget.bytes_outstanding(), 1000u);
  auto c = budget.allocate(1, env.s0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().kind, ErrorKind::OutOfBudget);
  EXPECT_EQ(c.error().requested, 1u);
  EXPECT_EQ(c.error().remaining, 0u);
}

TEST_F(BudgetTest, RequestLargerThanLimitRefused) {
  auto a = budget.allocate(1001, env.s0);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::OutOfBudget);
  EXPECT_EQ(a.error().requested, 1001u);
  EXPECT_EQ(a.error().remaining, 1000u);
  EXPECT_EQ(budget.limit(), 1000u);
}

TEST_F(BudgetTest, InnerErrorsPassThrough) {
  auto a = budget.allocate(10, StreamId{55});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::StreamMisuse);
  auto z = budget.allocate(0, env.s0);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().kind, ErrorKind::Driver);
}

TEST_F(BudgetTest, PendingBytesCountUntilReap) {
  auto a = budget.allocate(900, env.s0);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(budget.deallocate(a.value()).ok());
  EXPECT_EQ(inner.live_bytes(), 0u);
  EXPECT_EQ(inner.pending_free_bytes(), 900u);
  auto refused = budget.allocate(200, env.s0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().remaining, 100u);
  ASSERT_TRUE(budget.reap_pending().ok());
  EXPECT_EQ(budget.bytes_outstanding(), 0u);
  EXPECT_TRUE(budget.allocate(1000, env.s0).ok());
}

TEST_F(BudgetTest, ForwardsTrackingCalls) {
  auto a = budget.allocate(64, env.s0);
  ASSERT_TRUE(a.ok());
  const DeviceBlock& b = a.value();
  EXPECT_TRUE(budget.supports_block_use_tracking());
  ASSERT_TRUE(budget.prepare_block_use(BlockId::of(b), env.s1, Access::Read).ok());
  ASSERT_TRUE(budget.finish_block_use(BlockId::of(b), env.s1, Access::Read).ok());
  EXPECT_EQ(inner.pending_use_event_count(b.ptr), std::optional<std::size_t>(1));  // the read (P-alloc keeps none)
  ASSERT_TRUE(budget.record_block_use(b, env.s2).ok());
  EXPECT_EQ(inner.pending_use_event_count(b.ptr), std::optional<std::size_t>(2));
  ASSERT_TRUE(budget.finish_block_use(BlockId::of(b), env.s2, Access::Write).ok());
  EXPECT_EQ(inner.pending_use_event_count(b.ptr), std::optional<std::size_t>(1));
  auto stale = budget.prepare_block_use(testing::stale_id(b), env.s1, Access::Read);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().kind, ErrorKind::UseAfterFree);
  ASSERT_TRUE(budget.deallocate(b).ok());
  EXPECT_EQ(inner.pending_free_bytes(), 64u);
}

TEST_F(BudgetTest, RecorderWorksThroughDecorator) {
  auto a = budget.allocate(64, env.s0);
  ASSERT_TRUE(a.ok());
  LaunchRecorder<> rec(env.s1, RecorderMode::Strict);
  rec.read_write(&a.value());
  ASSERT_TRUE(rec.preflight(budget).ok());
  ASSERT_TRUE(rec.commit(budget).ok());
  EXPECT_EQ(inner.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(1));
}

TEST(BudgetDevice, ForwardsDeviceOrdinal) {
  sim::SimBackendOptions options;
  options.device_ordinal = 2;
  testing::SimEnv env(1, options);
  Inner inner(env.backend);
  Budget budget(inner, 100);
  EXPECT_EQ(budget.device_ordinal(), 2u);
  auto a = budget.allocate(8, env.s0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().device_ordinal, 2u);
}

TEST(BudgetOverNonTracking, DoesNotClaimTracking) {
  testing::SimEnv env;
  Direct direct(env.backend);
  BudgetResource<Direct> budget(direct, 256);
  EXPECT_FALSE(budget.supports_block_use_tracking());
  auto a = budget.allocate(200, env.s0);
  ASSERT_TRUE(a.ok());
  auto st = budget.prepare_block_use(BlockId::of(a.value()), env.s1, Access::Read);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  auto b = budget.allocate(100, env.s0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().remaining, 56u);
}

// ---------------------------------------------------------------- non-tracking

class NonTrackingTest : public ::testing::Test {
 protected:
  testing::SimEnv env;
  Direct direct{env.backend};
};

TEST_F(NonTrackingTest, TrackingCallsAreStreamMisuse) {
  auto a = direct.allocate(64, env.s0);
  ASSERT_TRUE(a.ok());
  const BlockId id = BlockId::of(a.value());
  const Status results[] = {direct.prepare_block_use(id, env.s1, Access::Read),
                            direct.finish_block_use(id, env.s1, Access::Write),
                            direct.record_block_use(a.value(), env.s1)};
  for (const auto& st : results) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
    EXPECT_NE(st.error().message.find("unsupported by NonTrackingResource"), std::string::npos) << st.error();
  }
  EXPECT_EQ(direct.bytes_outstanding(), 64u);
}

TEST_F(NonTrackingTest, AllocateDeallocateAccounting) {
  auto a = direct.allocate(64, env.s0);
  auto b = direct.allocate(32, env.s1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(direct.bytes_outstanding(), 96u);
  ASSERT_TRUE(direct.deallocate(a.value()).ok());
  EXPECT_EQ(direct.bytes_outstanding(), 32u) << "freed synchronously: nothing pending";
  ASSERT_TRUE(direct.reap_pending().ok());
  EXPECT_EQ(direct.bytes_outstanding(), 32u);
  auto again = direct.deallocate(a.value());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(direct.bytes_outstanding(), 32u);
}

// ---------------------------------------------------------------- P7

// P7: through BudgetResource, bytes_outstanding never exceeds the limit, and
// every refusal reports requested == bytes and remaining == limit - outstanding.
RC_GTEST_PROP(BudgetProperty, P7NeverExceedsLimitAndRefusalsAreExact, ()) {
  const std::size_t limit = *rc::gen::inRange<std::size_t>(1, 5000);
  testing::SimEnv env(*rc::gen::arbitrary<std::uint32_t>());
  Inner inner(env.backend);
  Budget budget(inner, limit);
  const StreamId streams[] = {env.s0, env.s1, env.s2};
  std::vector<DeviceBlock> live;
  std::size_t refusals = 0;

  const int steps = *rc::gen::inRange(1, 60);
  for (int i = 0; i < steps; ++i) {
    const int op = *rc::gen::inRange(0, 10);
    const std::size_t before = budget.bytes_outstanding();
    if (op < 5) {
      const std::size_t bytes = *rc::gen::inRange<std::size_t>(1, limit + limit / 2 + 2);
      const StreamId s = streams[*rc::gen::inRange(0, 3)];
      auto a = budget.allocate(bytes, s);
      if (a.ok()) {
        RC_ASSERT(bytes <= limit - before);
        RC_ASSERT(budget.bytes_outstanding() == before + bytes);
        live.push_back(a.value());
      } else {
        RC_ASSERT(budget.bytes_outstanding() == before);
        if (a.error().kind == ErrorKind::OutOfBudget) {
          ++refusals;
          RC_ASSERT(a.error().requested == bytes);
          RC_ASSERT(a.error().remaining == limit - before);
          RC_ASSERT(bytes > a.error().remaining);
        } else {
          // Only an injected fault may fail an in-budget allocation.
          RC_ASSERT(a.error().kind == ErrorKind::Driver);
          RC_ASSERT(testing::has_injected_fault(a.error()));
        }
      }
    } else if (op < 8) {
      if (live.empty()) continue;
      const std::size_t k = *rc::gen::inRange<std::size_t>(0, live.size());
      auto st = budget.deallocate(live[k]);
      if (st.ok()) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      } else {
        RC_ASSERT(testing::has_injected_fault(st.error()));
      }
      RC_ASSERT(budget.bytes_outstanding() == before);
    } else if (op < 9) {
      auto st = budget.reap_pending();
      const bool ok_or_fault = st.ok() || testing::has_injected_fault(st.error());
      RC_ASSERT(ok_or_fault);
      RC_ASSERT(budget.bytes_outstanding() <= before);
      if (st.ok()) RC_ASSERT(inner.pending_free_bytes() == 0u);
    } else {
      env.backend.arm_fault(*rc::gen::inRange<std::uint32_t>(0, 4));
    }
    RC_ASSERT(budget.bytes_outstanding() <= limit);
    RC_ASSERT(inner.bytes_outstanding() == inner.live_bytes() + inner.pending_free_bytes());
    RC_ASSERT(inner.pending_free_bytes() == inner.pending_per_stream_total());
  }
  RC_TAG(refusals > 0 ? "refused" : "no refusal");
}

}  // namespace
}  // namespace streamcheck
