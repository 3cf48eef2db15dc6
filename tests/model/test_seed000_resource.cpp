// Seed 000's resource acceptance cases, on the simulated backend.
#include <gtest/gtest.h>

#include "backend_sim/explain.h"
#include "model/resource.h"
#include "tests/model/sim_fixture.h"

namespace streamcheck {
namespace {

using testing::SimEnv;

class Seed000 : public ::testing::Test {
 protected:
  SimEnv env;
  sim::SimBackend& backend = env.backend;
  StreamId s = env.s0;
  Resource<sim::SimBackend> r{backend};
};

TEST_F(Seed000, AllocateDeallocateReapRoundTrip) {
  auto block = r.allocate(2048, s);
  ASSERT_TRUE(block.ok()) << block.error();
  EXPECT_EQ(block.value().bytes, 2048u);
  EXPECT_EQ(block.value().alloc_stream, s);
  EXPECT_EQ(block.value().state, BlockState::Live);
  EXPECT_EQ(r.live_bytes(), 2048u);
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  EXPECT_EQ(r.live_block_count(), 1u);

  ASSERT_TRUE(r.deallocate(block.value()).ok());
  // The free is queued, not drained: the bytes are pending until a reap.
  EXPECT_EQ(r.live_bytes(), 0u);
  EXPECT_EQ(r.pending_free_bytes(), 2048u);
  EXPECT_EQ(r.pending_per_stream_total(), 2048u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  EXPECT_EQ(r.live_block_count(), 0u);

  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TEST_F(Seed000, AllocateOnNonDefaultStream) {
  const StreamId other = env.s2;
  auto block = r.allocate(1024, other, AllocTag{"async-test"});
  ASSERT_TRUE(block.ok()) << block.error();
  EXPECT_EQ(block.value().alloc_stream, other);
  EXPECT_EQ(block.value().tag, AllocTag{"async-test"});
  ASSERT_TRUE(r.deallocate(block.value()).ok());
  EXPECT_EQ(r.bytes_outstanding(), 1024u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TEST_F(Seed000, AllocateUnknownStreamRejected) {
  auto block = r.allocate(64, StreamId{99});
  ASSERT_FALSE(block.ok());
  EXPECT_EQ(block.error().kind, ErrorKind::StreamMisuse);
  EXPECT_EQ(r.bytes_outstanding(), 0u);
  EXPECT_EQ(r.live_block_count(), 0u);
}

TEST_F(Seed000, DeallocateUnknownBlockIsUseAfterFree) {
  DeviceBlock bogus{0xfeedface, 0, s, 16, 1, AllocTag{}, Generation::next(), BlockState::Live};
  auto st = r.deallocate(bogus);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, bogus.generation);
  EXPECT_EQ(r.pending_free_bytes(), 0u);
}

TEST_F(Seed000, ReapWithNothingPendingIsNoop) {
  const auto calls_before = backend.calls();
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
  // No stream was synchronized: nothing was pending.
  EXPECT_EQ(backend.calls(), calls_before);
}

TEST_F(Seed000, ReapRestoresUnsyncedEntriesWhenSyncFails) {
  auto a = r.allocate(1024, env.s1);
  auto b = r.allocate(2048, env.s2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  ASSERT_EQ(r.pending_free_bytes(), 3072u);
  ASSERT_EQ(r.pending_per_stream_total(), 3072u);

  // The first synchronize (s1, the lowest id) fails: nothing was synced.
  backend.arm_fault(0);
  auto st = r.reap_pending();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Driver);
  EXPECT_TRUE(testing::has_injected_fault(st.error())) << st.error();
  EXPECT_EQ(r.pending_free_bytes(), 3072u);
  EXPECT_EQ(r.pending_per_stream_total(), r.pending_free_bytes());

  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
}

TEST_F(Seed000, ReapSubtractsOnlySyncedBytesWhenLaterSyncFails) {
  auto a = r.allocate(1024, env.s1);
  auto b = r.allocate(2048, env.s2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());

  // s1 synchronizes, s2's synchronize fails: only s2's bytes stay pending.
  backend.arm_fault(1);
  auto st = r.reap_pending();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::Driver);
  EXPECT_EQ(r.pending_free_bytes(), 2048u);
  EXPECT_EQ(r.pending_per_stream_total(), 2048u);

  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
}

TEST_F(Seed000, ReapDrainsNormally) {
  auto a = r.allocate(256, env.s1);
  auto b = r.allocate(512, env.s2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  ASSERT_EQ(r.pending_free_bytes(), 768u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TEST_F(Seed000, GenerationsAreFreshPerAllocation) {
  auto a = r.allocate(64, s);
  auto b = r.allocate(64, s);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a.value().generation, b.value().generation);
  EXPECT_NE(a.value().ptr, b.value().ptr);
  EXPECT_EQ(r.live_bytes(), 128u);
  EXPECT_EQ(r.live_block_count(), 2u);
}

TEST_F(Seed000, AllocationReadyEventIsTheFirstUseEvent) {
  auto a = r.allocate(64, s);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(1));
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr + 1), std::nullopt);
  ASSERT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s1, Access::Read).ok());
  ASSERT_TRUE(r.record_block_use(a.value(), env.s2).ok());
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(3));
  // A write subsumes the reads and the previous last_write.
  ASSERT_TRUE(r.prepare_block_use(BlockId::of(a.value()), env.s1, Access::Write).ok());
  ASSERT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s1, Access::Write).ok());
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(1));
}

}  // namespace
}  // namespace streamcheck

namespace streamcheck {
namespace {

// Read subsumption (R1+R2): a read event on a stream replaces the earlier one
// there, so a block read every iteration keeps one event per reading stream;
// the replaced events go back to the backend, and deallocate still waits for
// the newest read of each stream (no finding).
TEST_F(Seed000, RepeatedReadsOnOneStreamKeepOneEventPerStream) {
  auto a = r.allocate(64, s);
  ASSERT_TRUE(a.ok());
  const std::size_t events_with_one_read = [&] {
    EXPECT_TRUE(r.prepare_block_use(BlockId::of(a.value()), env.s1, Access::Read).ok());
    EXPECT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s1, Access::Read).ok());
    return backend.live_event_count();
  }();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(r.prepare_block_use(BlockId::of(a.value()), env.s1, Access::Read).ok());
    backend.launch(*backend.resolve_stream(env.s1), {KernelAccess{a.value().ptr, 64, Access::Read, {}}}, "reader");
    ASSERT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s1, Access::Read).ok());
  }
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(2));
  EXPECT_EQ(backend.live_event_count(), events_with_one_read);
  ASSERT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s2, Access::Read).ok());
  EXPECT_EQ(r.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(3));
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  env.model.finish();
  EXPECT_TRUE(env.model.findings().empty()) << streamcheck::sim::format(env.model, env.model.findings().front());
}

}  // namespace
}  // namespace streamcheck
