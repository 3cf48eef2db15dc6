// Seed 001's acceptance cases for LaunchRecorder, written once and run on
// every backend (sim, CUDA) and every tracking stack (Resource, the pool,
// the debug tier over either, and decorators over them): empty recorders, strict and permissive handling of
// untracked buffers, the preflight-before-commit order, the uses frozen at
// preflight, dedup to the strongest access, and the report of a recorder
// dropped without commit. The backend-independent dedup cases are in
// tests/model/test_recorder_dedup.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>

#include "model/launch_recorder.h"
#include "model/types.h"
#include "tests/conformance/fixture.h"

namespace streamcheck::conformance {

using Recorder = LaunchRecorder<>;

template <class S>
class RecorderSuite : public ConformanceTest<S> {
 protected:
  static bool contains(const Status& st, const std::string& text) {
    return !st.ok() && st.error().message.find(text) != std::string::npos;
  }
  StreamId launch() const { return this->s1; }
};

TYPED_TEST_SUITE_P(RecorderSuite);

TYPED_TEST_P(RecorderSuite, EmptyCommitIsOkInBothModes) {
  auto& r = this->r();
  Recorder permissive(this->launch(), RecorderMode::Permissive);
  Recorder strict(this->launch(), RecorderMode::Strict);
  const auto events = this->backend().live_event_count();
  EXPECT_TRUE(permissive.commit(r).ok());
  EXPECT_TRUE(strict.commit(r).ok());
  EXPECT_TRUE(permissive.committed());
  EXPECT_TRUE(strict.committed());
  EXPECT_EQ(this->backend().live_event_count(), events);
}

TYPED_TEST_P(RecorderSuite, PermissiveSkipsUntrackedSilently) {
  auto& r = this->r();
  Recorder rec(this->launch(), RecorderMode::Permissive);
  rec.read(nullptr);
  rec.write(nullptr, /*external=*/true);
  EXPECT_EQ(rec.recorded_count(), 0u);
  EXPECT_TRUE(rec.preflight(r).ok());
  EXPECT_TRUE(rec.commit(r).ok());
}

TYPED_TEST_P(RecorderSuite, StrictRejectsUntrackedAtPreflight) {
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(nullptr);
  auto st = rec.preflight(this->r());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(this->contains(st, "untracked buffer rejected")) << st.error();
  EXPECT_FALSE(rec.preflighted());
}

TYPED_TEST_P(RecorderSuite, StrictRejectsExternalBufferWithItsOwnReason) {
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read_write(nullptr, /*external=*/true);
  auto st = rec.preflight(this->r());
  EXPECT_TRUE(this->contains(st, "untracked buffer rejected"));
  EXPECT_TRUE(this->contains(st, "external memory"));
}

TYPED_TEST_P(RecorderSuite, PreflightThenCommit) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&buf);
  EXPECT_EQ(rec.recorded_count(), 1u);
  ASSERT_TRUE(rec.preflight(r).ok());
  EXPECT_TRUE(rec.preflighted());
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_TRUE(rec.committed());
  // The commit recorded the read; the block keeps no allocation-ready event
  // (P-alloc: the preflight's was its own).
  EXPECT_EQ(this->use_events(buf), this->expected_use_events(1, false));
}

// The protocol end to end: a write launched on s1 and a read launched on s2,
// each bracketed by the recorder, then the free; the backend's oracle (the
// HB checker, the GPU's stamp kernels) sees the read ordered after the write.
TYPED_TEST_P(RecorderSuite, PreflightLaunchCommitThenReadOnAnotherStreamSeesTheWrite) {
  auto& r = this->r();
  auto& backend = this->backend();
  const DeviceBlock b = this->alloc(1 << 20);
  {
    Recorder rec(this->s1, RecorderMode::Strict);
    rec.write(&b);
    ASSERT_TRUE(rec.preflight(r).ok());
    backend.launch(this->ref(this->s1), {KernelAccess{b.ptr, b.bytes, Access::Write, {}}}, "producer");
    ASSERT_TRUE(rec.commit(r).ok());
  }
  {
    Recorder rec(this->s2, RecorderMode::Strict);
    rec.read(&b);
    ASSERT_TRUE(rec.preflight(r).ok());
    backend.launch(this->ref(this->s2), {KernelAccess{b.ptr, b.bytes, Access::Read, {}}}, "consumer");
    ASSERT_TRUE(rec.commit(r).ok());
  }
  ASSERT_TRUE(r.deallocate(b).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  this->expect_no_problems_after_drain();
}

TYPED_TEST_P(RecorderSuite, CommitWithoutPreflightRefused) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&buf);
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(this->contains(st, "without a successful preflight")) << st.error();
  EXPECT_FALSE(rec.committed());
  EXPECT_EQ(this->use_events(buf), this->expected_use_events(0, false));  // as allocated: nothing recorded
  ASSERT_TRUE(r.deallocate(buf).ok());
}

TYPED_TEST_P(RecorderSuite, EmptyStrictCommitWithoutPreflightOk) {
  Recorder rec(this->launch(), RecorderMode::Strict);
  EXPECT_FALSE(rec.preflighted());
  EXPECT_TRUE(rec.commit(this->r()).ok());
}

TYPED_TEST_P(RecorderSuite, UseRecordedAfterPreflightFailsCommit) {
  auto& r = this->r();
  const DeviceBlock a = this->alloc();
  const DeviceBlock b = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&a);
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(&b);
  EXPECT_EQ(rec.recorded_count(), 1u);
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(this->contains(st, "recorded after preflight")) << st.error();
  EXPECT_EQ(this->use_events(b), this->expected_use_events(0, false));  // as allocated: nothing recorded
  rec.abandon();
  ASSERT_TRUE(r.deallocate(a).ok());
  ASSERT_TRUE(r.deallocate(b).ok());
}

TYPED_TEST_P(RecorderSuite, PermissiveAlsoRejectsUseAfterPreflight) {
  auto& r = this->r();
  const DeviceBlock a = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Permissive);
  rec.write(&a);
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(nullptr);
  EXPECT_TRUE(this->contains(rec.commit(r), "recorded after preflight"));
  rec.abandon();
}

TYPED_TEST_P(RecorderSuite, FreshWriteBeforePreflightAccepted) {
  auto& r = this->r();
  const DeviceBlock a = this->alloc();
  const DeviceBlock fresh = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&a);
  rec.write(&fresh);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  // One event each: the write, and the read (no allocation-ready event is
  // kept, P-alloc).
  EXPECT_EQ(this->use_events(fresh), this->expected_use_events(0, true));
  EXPECT_EQ(this->use_events(a), this->expected_use_events(1, false));
}

TYPED_TEST_P(RecorderSuite, ReadThenWriteDedupsToOneReadWrite) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&buf);
  rec.write(&buf);
  EXPECT_EQ(rec.recorded_count(), 2u);
  auto uses = rec.deduped_uses();
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].access, Access::ReadWrite);
  EXPECT_EQ(uses[0].block, BlockId::of(buf));
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  // One writing finish: last_write replaced, no read appended.
  EXPECT_EQ(this->use_events(buf), this->expected_use_events(0, true));
  ASSERT_TRUE(r.deallocate(buf).ok());
}

TYPED_TEST_P(RecorderSuite, RepeatedReadsDedupToOneRead) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Permissive);
  rec.read(&buf).read(&buf).use(&buf, Access::Read);
  auto uses = rec.deduped_uses();
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].access, Access::Read);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_EQ(this->use_events(buf), this->expected_use_events(1, false));  // one read event
}

TYPED_TEST_P(RecorderSuite, DroppedWithoutCommitAfterPreflightIsReported) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  const auto before = Recorder::dropped_without_commit();
  {
    Recorder rec(this->launch(), RecorderMode::Strict);
    rec.read(&buf);
    ASSERT_TRUE(rec.preflight(r).ok());
  }
  EXPECT_EQ(Recorder::dropped_without_commit(), before + 1);
  // The resource is still usable: the drop did not abort or corrupt it.
  EXPECT_TRUE(r.deallocate(buf).ok());
}

TYPED_TEST_P(RecorderSuite, DroppedWithoutPreflightOrAfterAbandonIsSilent) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  const auto before = Recorder::dropped_without_commit();
  {
    Recorder never_preflighted(this->launch(), RecorderMode::Strict);
    never_preflighted.read(&buf);
    Recorder abandoned(this->launch(), RecorderMode::Strict);
    abandoned.read(&buf);
    ASSERT_TRUE(abandoned.preflight(r).ok());
    abandoned.abandon();
    Recorder committed(this->launch(), RecorderMode::Strict);
    committed.read(&buf);
    ASSERT_TRUE(committed.preflight(r).ok());
    ASSERT_TRUE(committed.commit(r).ok());
  }
  EXPECT_EQ(Recorder::dropped_without_commit(), before);
}

TYPED_TEST_P(RecorderSuite, SecondCommitRefused) {
  auto& r = this->r();
  const DeviceBlock buf = this->alloc();
  Recorder rec(this->launch(), RecorderMode::Strict);
  rec.read(&buf);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  const auto uses = this->use_events(buf);
  const auto events = this->backend().live_event_count();
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(this->contains(st, "already committed")) << st.error();
  EXPECT_EQ(this->use_events(buf), uses);
  EXPECT_EQ(this->backend().live_event_count(), events);
}

REGISTER_TYPED_TEST_SUITE_P(RecorderSuite, EmptyCommitIsOkInBothModes, PermissiveSkipsUntrackedSilently,
                            StrictRejectsUntrackedAtPreflight, StrictRejectsExternalBufferWithItsOwnReason,
                            PreflightThenCommit, PreflightLaunchCommitThenReadOnAnotherStreamSeesTheWrite,
                            CommitWithoutPreflightRefused, EmptyStrictCommitWithoutPreflightOk,
                            UseRecordedAfterPreflightFailsCommit, PermissiveAlsoRejectsUseAfterPreflight,
                            FreshWriteBeforePreflightAccepted, ReadThenWriteDedupsToOneReadWrite,
                            RepeatedReadsDedupToOneRead, DroppedWithoutCommitAfterPreflightIsReported,
                            DroppedWithoutPreflightOrAfterAbandonIsSilent, SecondCommitRefused);

}  // namespace streamcheck::conformance
