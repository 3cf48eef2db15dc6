// Seed 001's launch-recorder acceptance cases, on the simulated backend.
#include <gtest/gtest.h>

#include <string>

#include "model/launch_recorder.h"
#include "model/mutants.h"
#include "model/non_tracking_resource.h"
#include "model/resource.h"
#include "tests/model/sim_fixture.h"

namespace streamcheck {
namespace {

using Recorder = LaunchRecorder<>;

class Seed001 : public ::testing::Test {
 protected:
  DeviceBlock alloc(std::size_t bytes = 64) {
    auto b = r.allocate(bytes, env.s0);
    EXPECT_TRUE(b.ok());
    return b.value();
  }
  static bool contains(const Status& st, const std::string& text) {
    return !st.ok() && st.error().message.find(text) != std::string::npos;
  }

  testing::SimEnv env;
  Resource<sim::SimBackend> r{env.backend};
  StreamId launch = env.s1;
};

TEST_F(Seed001, EmptyCommitIsOkInBothModes) {
  Recorder permissive(launch, RecorderMode::Permissive);
  Recorder strict(launch, RecorderMode::Strict);
  const auto events = env.backend.live_event_count();
  EXPECT_TRUE(permissive.commit(r).ok());
  EXPECT_TRUE(strict.commit(r).ok());
  EXPECT_TRUE(permissive.committed());
  EXPECT_TRUE(strict.committed());
  EXPECT_EQ(env.backend.live_event_count(), events);
}

TEST_F(Seed001, PermissiveSkipsUntrackedSilently) {
  Recorder rec(launch, RecorderMode::Permissive);
  rec.read(nullptr);
  rec.write(nullptr, /*external=*/true);
  EXPECT_EQ(rec.recorded_count(), 0u);
  EXPECT_TRUE(rec.preflight(r).ok());
  EXPECT_TRUE(rec.commit(r).ok());
}

TEST_F(Seed001, StrictRejectsUntrackedAtPreflight) {
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(nullptr);
  auto st = rec.preflight(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(contains(st, "untracked buffer rejected")) << st.error();
  EXPECT_FALSE(rec.preflighted());
}

TEST_F(Seed001, StrictRejectsExternalBufferWithItsOwnReason) {
  Recorder rec(launch, RecorderMode::Strict);
  rec.read_write(nullptr, /*external=*/true);
  auto st = rec.preflight(r);
  EXPECT_TRUE(contains(st, "untracked buffer rejected"));
  EXPECT_TRUE(contains(st, "external memory"));
}

TEST_F(Seed001, PreflightRejectsNonTrackingResource) {
  NonTrackingResource<sim::SimBackend> direct(env.backend);
  auto buf = direct.allocate(64, env.s0);
  ASSERT_TRUE(buf.ok());
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&buf.value());
  auto st = rec.preflight(direct);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(contains(st, "does not support cross-stream use tracking")) << st.error();
  EXPECT_FALSE(rec.preflighted());
}

TEST_F(Seed001, PreflightThenCommit) {
  const DeviceBlock buf = alloc();
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&buf);
  EXPECT_EQ(rec.recorded_count(), 1u);
  ASSERT_TRUE(rec.preflight(r).ok());
  EXPECT_TRUE(rec.preflighted());
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_TRUE(rec.committed());
  // The commit appended a read event to the allocation-ready event.
  EXPECT_EQ(r.pending_use_event_count(buf.ptr), std::optional<std::size_t>(2));
}

TEST_F(Seed001, CommitWithoutPreflightRefused) {
  const DeviceBlock buf = alloc();
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&buf);
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(contains(st, "without a successful preflight")) << st.error();
  EXPECT_FALSE(rec.committed());
  EXPECT_EQ(r.pending_use_event_count(buf.ptr), std::optional<std::size_t>(1));
}

TEST_F(Seed001, EmptyStrictCommitWithoutPreflightOk) {
  Recorder rec(launch, RecorderMode::Strict);
  EXPECT_FALSE(rec.preflighted());
  EXPECT_TRUE(rec.commit(r).ok());
}

TEST_F(Seed001, UseRecordedAfterPreflightFailsCommit) {
  const DeviceBlock a = alloc();
  const DeviceBlock b = alloc();
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&a);
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(&b);
  EXPECT_EQ(rec.recorded_count(), 1u);
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(contains(st, "recorded after preflight")) << st.error();
  EXPECT_EQ(r.pending_use_event_count(b.ptr), std::optional<std::size_t>(1));
  rec.abandon();
}

TEST_F(Seed001, PermissiveAlsoRejectsUseAfterPreflight) {
  const DeviceBlock a = alloc();
  Recorder rec(launch, RecorderMode::Permissive);
  rec.write(&a);
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(nullptr);
  EXPECT_TRUE(contains(rec.commit(r), "recorded after preflight"));
  rec.abandon();
}

TEST_F(Seed001, FreshWriteBeforePreflightAccepted) {
  const DeviceBlock a = alloc();
  const DeviceBlock fresh = alloc();
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&a);
  rec.write(&fresh);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  // The write replaced the allocation-ready event; the read was appended.
  EXPECT_EQ(r.pending_use_event_count(fresh.ptr), std::optional<std::size_t>(1));
  EXPECT_EQ(r.pending_use_event_count(a.ptr), std::optional<std::size_t>(2));
}

TEST_F(Seed001, ReadThenWriteDedupsToOneReadWrite) {
  const DeviceBlock buf = alloc();
  Recorder rec(launch, RecorderMode::Strict);
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
  EXPECT_EQ(r.pending_use_event_count(buf.ptr), std::optional<std::size_t>(1));
}

TEST_F(Seed001, RepeatedReadsDedupToOneRead) {
  const DeviceBlock buf = alloc();
  Recorder rec(launch, RecorderMode::Permissive);
  rec.read(&buf).read(&buf).use(&buf, Access::Read);
  auto uses = rec.deduped_uses();
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].access, Access::Read);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_EQ(r.pending_use_event_count(buf.ptr), std::optional<std::size_t>(2));
}

std::vector<Recorder::RecordedUse> aba_uses(Access second) {
  const BlockId a{0xdeadbeef, Generation{1}, StreamId{0}, 0};
  const BlockId b{0xdeadbeef, Generation{2}, StreamId{0}, 0};
  return {{a, Access::Read, "read"}, {b, second, "write"}};
}

TEST(Seed001Dedup, KeysOnFullBlockIdNotPtrAlone) {
  auto out = Recorder::dedup(aba_uses(Access::Write));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].block.generation, Generation{1});
  EXPECT_EQ(out[0].access, Access::Read);
  EXPECT_EQ(out[1].block.generation, Generation{2});
  EXPECT_EQ(out[1].access, Access::Write);
}

TEST(Seed001Dedup, KeysOnDeviceOrdinal) {
  const BlockId a{0x1000, Generation{7}, StreamId{0}, 0};
  BlockId b = a;
  b.device_ordinal = 1;
  auto out = Recorder::dedup({{a, Access::Read, "read"}, {b, Access::Read, "read"}});
  EXPECT_EQ(out.size(), 2u);
}

TEST(Seed001Dedup, SameIdCollapsesWithCombinedAccess) {
  const BlockId a{0xdeadbeef, Generation{1}, StreamId{0}, 0};
  auto out = Recorder::dedup({{a, Access::Read, "read"}, {a, Access::Write, "write"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].access, Access::ReadWrite);
}

TEST(Seed001Dedup, MutantM9CollapsesDistinctGenerations) {
  auto out = LaunchRecorder<MutantSet<MutantId::M9>>::dedup(
      {{BlockId{0xdeadbeef, Generation{1}, StreamId{0}, 0}, Access::Read, "read"},
       {BlockId{0xdeadbeef, Generation{2}, StreamId{0}, 0}, Access::Write, "write"}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].access, Access::ReadWrite);
}

TEST_F(Seed001, DroppedWithoutCommitAfterPreflightIsReported) {
  const DeviceBlock buf = alloc();
  const auto before = Recorder::dropped_without_commit();
  {
    Recorder rec(launch, RecorderMode::Strict);
    rec.read(&buf);
    ASSERT_TRUE(rec.preflight(r).ok());
  }
  EXPECT_EQ(Recorder::dropped_without_commit(), before + 1);
  // The resource is still usable: the drop did not abort or corrupt it.
  EXPECT_TRUE(r.deallocate(buf).ok());
}

TEST_F(Seed001, DroppedWithoutPreflightOrAfterAbandonIsSilent) {
  const DeviceBlock buf = alloc();
  const auto before = Recorder::dropped_without_commit();
  {
    Recorder never_preflighted(launch, RecorderMode::Strict);
    never_preflighted.read(&buf);
    Recorder abandoned(launch, RecorderMode::Strict);
    abandoned.read(&buf);
    ASSERT_TRUE(abandoned.preflight(r).ok());
    abandoned.abandon();
    Recorder committed(launch, RecorderMode::Strict);
    committed.read(&buf);
    ASSERT_TRUE(committed.preflight(r).ok());
    ASSERT_TRUE(committed.commit(r).ok());
  }
  EXPECT_EQ(Recorder::dropped_without_commit(), before);
}

TEST_F(Seed001, SecondCommitRefused) {
  const DeviceBlock buf = alloc();
  Recorder rec(launch, RecorderMode::Strict);
  rec.read(&buf);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  const auto uses = r.pending_use_event_count(buf.ptr);
  const auto events = env.backend.live_event_count();
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::StreamMisuse);
  EXPECT_TRUE(contains(st, "already committed")) << st.error();
  EXPECT_EQ(r.pending_use_event_count(buf.ptr), uses);
  EXPECT_EQ(env.backend.live_event_count(), events);
}

}  // namespace
}  // namespace streamcheck
