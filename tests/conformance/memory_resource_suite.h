// What every MemoryResource promises (model/memory_resource.h), written once
// and run on every backend and every resource stack, NonTrackingResource and
// the decorators over it included: a live block as asked for, refusals that
// change nothing, the generation guard, the device ordinal, and tracking
// calls (and a LaunchRecorder's preflight) that agree with
// supports_block_use_tracking().
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "model/launch_recorder.h"
#include "model/types.h"
#include "tests/conformance/fixture.h"

namespace streamcheck::conformance {

template <class S>
class MemoryResourceSuite : public ConformanceTest<S> {};

TYPED_TEST_SUITE_P(MemoryResourceSuite);

TYPED_TEST_P(MemoryResourceSuite, AllocatedBlockIsLiveAsAskedAndReapedToZero) {
  auto& r = this->r();
  auto a = r.allocate(256, this->s1, AllocTag{"conformance"});
  ASSERT_TRUE(a.ok()) << a.error();
  const DeviceBlock& b = a.value();
  EXPECT_NE(b.ptr, 0u);
  EXPECT_EQ(b.bytes, 256u);
  EXPECT_EQ(b.alloc_stream, this->s1);
  EXPECT_EQ(b.tag, AllocTag{"conformance"});
  EXPECT_EQ(b.state, BlockState::Live);
  EXPECT_EQ(b.device_ordinal, r.device_ordinal());
  EXPECT_EQ(r.device_ordinal(), this->backend().device_ordinal());
  EXPECT_EQ(r.bytes_outstanding(), 256u);
  ASSERT_TRUE(r.deallocate(b).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TYPED_TEST_P(MemoryResourceSuite, ZeroBytesAndUnknownStreamAreRefused) {
  auto& r = this->r();
  auto zero = r.allocate(0, this->s0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().kind, ErrorKind::Driver);
  auto unknown = r.allocate(8, StreamId{31});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::StreamMisuse);
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TYPED_TEST_P(MemoryResourceSuite, SecondDeallocateIsUseAfterFreeAndChangesNothing) {
  auto& r = this->r();
  const DeviceBlock a = this->alloc(64);
  const DeviceBlock b = this->alloc(32, this->s2);
  ASSERT_TRUE(r.deallocate(a).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 32u);
  auto again = r.deallocate(a);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(again.error().generation, a.generation);
  EXPECT_EQ(r.bytes_outstanding(), 32u);
  ASSERT_TRUE(r.deallocate(b).ok());
}

TYPED_TEST_P(MemoryResourceSuite, TrackingCallsAgreeWithSupportsBlockUseTracking) {
  auto& r = this->r();
  EXPECT_EQ(r.supports_block_use_tracking(), TestFixture::Stack::tracks);
  const DeviceBlock a = this->alloc(64);
  const BlockId id = BlockId::of(a);
  const Status results[] = {r.prepare_block_use(id, this->s1, Access::Read),
                            r.finish_block_use(id, this->s1, Access::Write), r.record_block_use(a, this->s1)};
  for (const auto& st : results) {
    if (r.supports_block_use_tracking()) {
      EXPECT_TRUE(st.ok()) << st.error();
    } else {
      ASSERT_FALSE(st.ok());
      EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
    }
  }
  EXPECT_EQ(r.bytes_outstanding(), 64u);
  ASSERT_TRUE(r.deallocate(a).ok());
}

// A recorder with uses needs a resource that tracks them: on one that does
// not, preflight refuses before any work is enqueued (seed 001).
TYPED_TEST_P(MemoryResourceSuite, RecorderPreflightNeedsUseTracking) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc(64);
  LaunchRecorder<> rec(this->s1, RecorderMode::Strict);
  rec.read(&buf);
  auto st = rec.preflight(r);
  if (r.supports_block_use_tracking()) {
    ASSERT_TRUE(st.ok()) << st.error();
    ASSERT_TRUE(rec.commit(r).ok());
  } else {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
    EXPECT_NE(st.error().message.find("does not support cross-stream use tracking"), std::string::npos) << st.error();
    EXPECT_FALSE(rec.preflighted());
  }
  ASSERT_TRUE(r.deallocate(buf).ok());
}

REGISTER_TYPED_TEST_SUITE_P(MemoryResourceSuite, AllocatedBlockIsLiveAsAskedAndReapedToZero,
                            ZeroBytesAndUnknownStreamAreRefused, SecondDeallocateIsUseAfterFreeAndChangesNothing,
                            TrackingCallsAgreeWithSupportsBlockUseTracking, RecorderPreflightNeedsUseTracking);

}  // namespace streamcheck::conformance
