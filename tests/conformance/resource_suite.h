// Seed 000's acceptance cases for the stream-ordered resource, written once
// and run on every backend (sim, CUDA) and every tracking stack (Resource and
// each decorator over it): accounting of live and pending bytes, reap's
// recovery from a failed synchronize, generations, and the use events the
// resource keeps per block (P-alloc, P-finish, read subsumption).
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "model/types.h"
#include "tests/conformance/fixture.h"

namespace streamcheck::conformance {

template <class S>
class ResourceSuite : public ConformanceTest<S> {
 protected:
  /// Allocates `on_s1` bytes on s1 and `on_s2` bytes on s2 and deallocates
  /// both: their frees are pending on two streams.
  void pend_on_s1_and_s2(std::size_t on_s1, std::size_t on_s2) {
    auto a = this->r().allocate(on_s1, this->s1);
    auto b = this->r().allocate(on_s2, this->s2);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(this->r().deallocate(a.value()).ok());
    ASSERT_TRUE(this->r().deallocate(b.value()).ok());
  }
  /// Arms the backend to fail its `nth` call from now on, and checks that the
  /// reap fails with that injected fault.
  void expect_reap_fails_at_call(std::uint32_t nth) {
    this->backend().arm_fault(nth);
    auto st = this->r().reap_pending();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::Driver);
    EXPECT_TRUE(is_injected_fault(st.error())) << st.error();
  }
  /// A reap that succeeds leaves nothing pending and nothing outstanding (P3).
  void expect_reap_drains_everything() {
    ASSERT_TRUE(this->r().reap_pending().ok());
    EXPECT_EQ(this->tracked().pending_free_bytes(), 0u);
    EXPECT_EQ(this->tracked().pending_per_stream_total(), 0u);
    EXPECT_EQ(this->r().bytes_outstanding(), 0u);
  }
};

TYPED_TEST_SUITE_P(ResourceSuite);

TYPED_TEST_P(ResourceSuite, AllocateDeallocateReapRoundTrip) {
  auto& r = this->r();
  auto& t = this->tracked();
  auto block = r.allocate(2048, this->s0);
  ASSERT_TRUE(block.ok()) << block.error();
  EXPECT_EQ(block.value().bytes, 2048u);
  EXPECT_EQ(block.value().alloc_stream, this->s0);
  EXPECT_EQ(block.value().state, BlockState::Live);
  EXPECT_NE(block.value().ptr, 0u);
  EXPECT_EQ(t.live_bytes(), 2048u);
  EXPECT_EQ(t.pending_free_bytes(), 0u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  EXPECT_EQ(t.live_block_count(), 1u);

  ASSERT_TRUE(r.deallocate(block.value()).ok());
  // The free is queued, not drained: the bytes are pending until a reap.
  EXPECT_EQ(t.live_bytes(), 0u);
  EXPECT_EQ(t.pending_free_bytes(), 2048u);
  EXPECT_EQ(t.pending_per_stream_total(), 2048u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  EXPECT_EQ(t.live_block_count(), 0u);

  this->expect_reap_drains_everything();
}

TYPED_TEST_P(ResourceSuite, AllocateOnNonDefaultStream) {
  auto& r = this->r();
  const StreamId other = this->s2;
  auto block = r.allocate(1024, other, AllocTag{"async-test"});
  ASSERT_TRUE(block.ok()) << block.error();
  EXPECT_EQ(block.value().alloc_stream, other);
  EXPECT_EQ(block.value().tag, AllocTag{"async-test"});
  ASSERT_TRUE(r.deallocate(block.value()).ok());
  EXPECT_EQ(r.bytes_outstanding(), 1024u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TYPED_TEST_P(ResourceSuite, AllocateUnknownStreamRejected) {
  auto& r = this->r();
  auto block = r.allocate(64, StreamId{99});
  ASSERT_FALSE(block.ok());
  EXPECT_EQ(block.error().kind, ErrorKind::StreamMisuse);
  EXPECT_EQ(r.bytes_outstanding(), 0u);
  EXPECT_EQ(this->tracked().live_block_count(), 0u);
}

TYPED_TEST_P(ResourceSuite, DeallocateUnknownBlockIsUseAfterFree) {
  auto& r = this->r();
  DeviceBlock bogus{0xfeedface, 0, this->s0, 16, 1, AllocTag{}, Generation::next(), BlockState::Live};
  auto st = r.deallocate(bogus);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, bogus.generation);
  EXPECT_EQ(this->tracked().pending_free_bytes(), 0u);
}

TYPED_TEST_P(ResourceSuite, ReapWithNothingPendingIsNoop) {
  auto& r = this->r();
  auto& backend = this->backend();
  std::optional<std::uint64_t> calls_before;
  if constexpr (CountsCalls<std::remove_cvref_t<decltype(backend)>>) calls_before = backend.calls();
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
  // No stream was synchronized: nothing was pending.
  if constexpr (CountsCalls<std::remove_cvref_t<decltype(backend)>>) {
    EXPECT_EQ(backend.calls(), calls_before);
  }
}

TYPED_TEST_P(ResourceSuite, ReapRestoresUnsyncedEntriesWhenSyncFails) {
  auto& t = this->tracked();
  ASSERT_NO_FATAL_FAILURE(this->pend_on_s1_and_s2(1024, 2048));
  ASSERT_EQ(t.pending_free_bytes(), 3072u);
  ASSERT_EQ(t.pending_per_stream_total(), 3072u);

  // The first synchronize (s1, the lowest id) fails: nothing was synced.
  ASSERT_NO_FATAL_FAILURE(this->expect_reap_fails_at_call(0));
  EXPECT_EQ(t.pending_free_bytes(), 3072u);
  EXPECT_EQ(t.pending_per_stream_total(), t.pending_free_bytes());

  this->expect_reap_drains_everything();
}

TYPED_TEST_P(ResourceSuite, ReapSubtractsOnlySyncedBytesWhenLaterSyncFails) {
  auto& t = this->tracked();
  ASSERT_NO_FATAL_FAILURE(this->pend_on_s1_and_s2(1024, 2048));

  // s1 synchronizes, s2's synchronize fails: only s2's bytes stay pending.
  ASSERT_NO_FATAL_FAILURE(this->expect_reap_fails_at_call(1));
  EXPECT_EQ(t.pending_free_bytes(), 2048u);
  EXPECT_EQ(t.pending_per_stream_total(), 2048u);

  this->expect_reap_drains_everything();
}

TYPED_TEST_P(ResourceSuite, ReapDrainsNormally) {
  ASSERT_NO_FATAL_FAILURE(this->pend_on_s1_and_s2(256, 512));
  ASSERT_EQ(this->tracked().pending_free_bytes(), 768u);
  this->expect_reap_drains_everything();
}

TYPED_TEST_P(ResourceSuite, GenerationsAreFreshPerAllocation) {
  auto& r = this->r();
  auto a = r.allocate(64, this->s0);
  auto b = r.allocate(64, this->s0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a.value().generation, b.value().generation);
  EXPECT_NE(a.value().ptr, b.value().ptr);
  EXPECT_EQ(this->tracked().live_bytes(), 128u);
  EXPECT_EQ(this->tracked().live_block_count(), 2u);
}

// P-alloc: no event at allocate; a prepare on another stream before the
// first write waits on an allocation-ready event that the block does not
// keep; the first write's event is the block's first use event.
TYPED_TEST_P(ResourceSuite, AllocationReadyEventIsTheCallersAlone) {
  auto& r = this->r();
  auto& t = this->tracked();
  const std::size_t events = this->backend().live_event_count();
  auto a = r.allocate(64, this->s0);
  ASSERT_TRUE(a.ok());
  const BlockId id = BlockId::of(a.value());
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(0));
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr + 1), std::nullopt);
  EXPECT_EQ(this->backend().live_event_count(), events);
  ASSERT_TRUE(r.prepare_block_use(id, this->s0, Access::ReadWrite).ok());  // the alloc stream: R1 orders it
  ASSERT_TRUE(r.prepare_block_use(id, this->s1, Access::Read).ok());
  ASSERT_TRUE(r.prepare_block_use(id, this->s2, Access::Read).ok());
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(0));
  EXPECT_EQ(this->backend().live_event_count(), events);
  ASSERT_TRUE(r.finish_block_use(id, this->s1, Access::Read).ok());
  ASSERT_TRUE(r.record_block_use(a.value(), this->s2).ok());
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(2));
  // A write subsumes the reads.
  ASSERT_TRUE(r.prepare_block_use(id, this->s1, Access::Write).ok());
  ASSERT_TRUE(r.finish_block_use(id, this->s1, Access::Write).ok());
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(1));
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  this->expect_no_problems_after_drain();
}

// Read subsumption (R1+R2): a read event on a stream replaces the earlier one
// there, so a block read every iteration keeps one event per reading stream;
// the replaced events go back to the backend, and deallocate still waits for
// the newest read of each stream (the backend's oracle sees no problem).
TYPED_TEST_P(ResourceSuite, RepeatedReadsOnOneStreamKeepOneEventPerStream) {
  auto& r = this->r();
  auto& t = this->tracked();
  auto& backend = this->backend();
  auto a = r.allocate(64, this->s0);
  ASSERT_TRUE(a.ok());
  const BlockId id = BlockId::of(a.value());
  ASSERT_TRUE(r.prepare_block_use(id, this->s1, Access::Read).ok());
  ASSERT_TRUE(r.finish_block_use(id, this->s1, Access::Read).ok());
  const std::size_t events_with_one_read = backend.live_event_count();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(r.prepare_block_use(id, this->s1, Access::Read).ok());
    backend.launch(this->ref(this->s1), {KernelAccess{a.value().ptr, 64, Access::Read, {}}}, "reader");
    ASSERT_TRUE(r.finish_block_use(id, this->s1, Access::Read).ok());
  }
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(1));  // s1's newest read
  EXPECT_EQ(backend.live_event_count(), events_with_one_read);
  ASSERT_TRUE(r.finish_block_use(id, this->s2, Access::Read).ok());
  EXPECT_EQ(t.pending_use_event_count(a.value().ptr), std::optional<std::size_t>(2));
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  this->expect_no_problems_after_drain();
}

REGISTER_TYPED_TEST_SUITE_P(ResourceSuite, AllocateDeallocateReapRoundTrip, AllocateOnNonDefaultStream,
                            AllocateUnknownStreamRejected, DeallocateUnknownBlockIsUseAfterFree,
                            ReapWithNothingPendingIsNoop, ReapRestoresUnsyncedEntriesWhenSyncFails,
                            ReapSubtractsOnlySyncedBytesWhenLaterSyncFails, ReapDrainsNormally,
                            GenerationsAreFreshPerAllocation, AllocationReadyEventIsTheCallersAlone,
                            RepeatedReadsOnOneStreamKeepOneEventPerStream);

}  // namespace streamcheck::conformance
