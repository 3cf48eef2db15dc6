// Every error branch of Resource and LaunchRecorder: the error kind, that
// nothing observable changed (P4), and that a retry succeeds once an
// injected fault has cleared.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "model/backend.h"
#include "model/launch_recorder.h"
#include "model/mutants.h"
#include "model/non_tracking_resource.h"
#include "model/resource.h"
#include "props/resource_snapshot.h"
#include "tests/model/sim_fixture.h"

namespace streamcheck {
namespace {

using props::snapshot_of;
using testing::has_injected_fault;
using testing::on_device;
using Snapshot = props::ResourceSnapshot;
using testing::stale_id;

// A deterministic backend for the branches the simulator cannot reach: it
// can hand out one address twice, and run a callback inside record_event.
class FakeBackend {
 public:
  using StreamRef = std::uint32_t;
  using Mutex = std::mutex;
  template <class T>
  using Atomic = std::atomic<T>;

  class Event {
   public:
    explicit Event(std::size_t* live) : live_(live) { ++*live_; }
    Event(Event&& o) noexcept : live_(std::exchange(o.live_, nullptr)) {}
    Event& operator=(Event&& o) noexcept {
      if (this != &o) {
        release();
        live_ = std::exchange(o.live_, nullptr);
      }
      return *this;
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event() { release(); }

   private:
    void release() {
      if (live_) --*live_;
      live_ = nullptr;
    }
    std::size_t* live_;
  };

  std::optional<StreamRef> resolve_stream(StreamId id) const {
    if (id.value < 4) return id.value;
    return std::nullopt;
  }
  Result<Event> create_event() { return Event(&live_events); }
  Status record_event(Event&, StreamRef) {
    if (on_record) std::exchange(on_record, {})();
    return {};
  }
  Status wait_event(StreamRef, const Event&) { return {}; }
  Result<std::uint64_t> alloc_async(std::size_t, StreamRef) {
    if (fixed_ptr) return *fixed_ptr;
    next_ptr += 0x1000;
    return next_ptr;
  }
  Status free_async(std::uint64_t, StreamRef) {
    ++frees;
    return {};
  }
  Status synchronize_stream(StreamRef) { return {}; }
  std::uint32_t device_ordinal() const { return 0; }

  std::optional<std::uint64_t> fixed_ptr;
  std::function<void()> on_record;
  std::uint64_t next_ptr = 0x10000;
  std::size_t live_events = 0;
  std::size_t frees = 0;
};
static_assert(Backend<FakeBackend>);

class ErrorPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = r.allocate(512, env.s0, AllocTag{"block"});
    ASSERT_TRUE(b.ok());
    block = b.value();
    id = BlockId::of(block);
  }
  Snapshot snap() const { return snapshot_of(r, env.backend, block.ptr); }
  static void expect_kind(const Status& st, ErrorKind kind) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, kind) << st.error();
  }
  static void expect_fault(const Status& st) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::Driver) << st.error();
    EXPECT_TRUE(has_injected_fault(st.error())) << st.error();
  }
  sim::OpKind last_op_kind(StreamId s) const {
    const auto ref = *env.backend.resolve_stream(s);
    const auto n = env.model.op_count(ref);
    EXPECT_GT(n, 0u);
    return env.model.op_kind(sim::OpRef{ref, n - 1});
  }

  testing::SimEnv env;
  Resource<sim::SimBackend> r{env.backend};
  DeviceBlock block;
  BlockId id;
};

// ---------------------------------------------------------------- messages

// Each error's whole text, as a caller logs it: which call refused and why.
// The texts are built out of line on cold paths (model/resource.h); this
// pins them, so moving them cannot change what a user reads.
TEST_F(ErrorPaths, EachErrorSaysWhichCallRefusedAndWhy) {
  const auto text = [](const auto& result) {
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string("ok") : result.error().to_string();
  };
  EXPECT_EQ(text(r.allocate(0, env.s0)), "driver error: Resource::allocate: zero-byte allocation not supported");
  EXPECT_EQ(text(r.allocate(64, StreamId{77})),
            "stream-ordered contract violated: Resource::allocate: unknown StreamId(77)");
  env.backend.arm_fault(0);
  EXPECT_EQ(text(r.allocate(64, env.s1)),
            "driver error: Resource::allocate: alloc_async: injected fault at alloc_async");
  EXPECT_EQ(text(r.prepare_block_use(on_device(block, 3), env.s1, Access::Read)),
            "driver error: Resource::prepare_block_use: block device 3 != resource device 0");
  EXPECT_EQ(text(r.prepare_block_use(id, StreamId{42}, Access::Read)),
            "stream-ordered contract violated: Resource::prepare_block_use: unknown StreamId(42)");
  env.backend.arm_fault(0);
  EXPECT_EQ(text(r.prepare_block_use(id, env.s1, Access::Read)),
            "driver error: Resource::prepare_block_use: create allocation-ready event: injected fault at "
            "create_event");
  EXPECT_EQ(text(r.finish_block_use(on_device(block, 1), env.s1, Access::Write)),
            "driver error: Resource::finish_block_use: block device 1 != resource device 0");
  EXPECT_EQ(text(r.finish_block_use(id, StreamId{9}, Access::Write)),
            "stream-ordered contract violated: Resource::finish_block_use: unknown StreamId(9)");
  env.backend.arm_fault(1);  // create_event, then record_event
  EXPECT_EQ(text(r.finish_block_use(id, env.s1, Access::Write)),
            "driver error: Resource::finish_block_use: record event: injected fault at record_event");
  const BlockId stale = stale_id(block);
  EXPECT_EQ(text(r.finish_block_use(stale, env.s1, Access::Write)),
            "use after free of generation " + std::to_string(stale.generation.value));
  DeviceBlock elsewhere = block;
  elsewhere.device_ordinal = 2;
  EXPECT_EQ(text(r.deallocate(elsewhere)), "driver error: Resource::deallocate: block device 2 != resource device 0");
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Write).ok());
  env.backend.arm_fault(0);
  EXPECT_EQ(text(r.deallocate(block)),
            "driver error: Resource::deallocate: wait on last_write: injected fault at wait_event");
  env.backend.remove_stream(env.s0);
  EXPECT_EQ(text(r.deallocate(block)), "stream-ordered contract violated: Resource::deallocate: unknown StreamId(" +
                                           std::to_string(env.s0.value) + ")");
  auto on_s2 = r.allocate(64, env.s2);
  ASSERT_TRUE(on_s2.ok());
  env.backend.remove_stream(env.s2);
  EXPECT_EQ(text(r.prepare_block_use(BlockId::of(on_s2.value()), env.s1, Access::Read)),
            "stream-ordered contract violated: Resource::prepare_block_use: the block's alloc stream StreamId(" +
                std::to_string(env.s2.value) +
                ") is gone, so the allocation-ready event this first use on another stream waits for cannot be "
                "recorded (P-alloc)");
}

// ---------------------------------------------------------------- allocate

TEST_F(ErrorPaths, AllocateZeroBytesIsDriverError) {
  const Snapshot before = snap();
  const auto calls = env.backend.calls();
  auto b = r.allocate(0, env.s0);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::Driver);
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(env.backend.calls(), calls) << "rejected before any backend call";
}

TEST_F(ErrorPaths, AllocateUnknownStreamIsStreamMisuse) {
  const Snapshot before = snap();
  const auto calls = env.backend.calls();
  auto b = r.allocate(64, StreamId{77});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::StreamMisuse);
  EXPECT_NE(b.error().message.find("StreamId(77)"), std::string::npos) << b.error();
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(env.backend.calls(), calls);
}

TEST_F(ErrorPaths, AllocateAllocAsyncFault) {
  const Snapshot before = snap();
  env.backend.arm_fault(0);
  auto b = r.allocate(64, env.s1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::Driver);
  EXPECT_TRUE(has_injected_fault(b.error())) << b.error();
  EXPECT_EQ(snap(), before);
  auto retry = r.allocate(64, env.s1);
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(r.live_bytes(), before.live_bytes + 64);
}

TEST_F(ErrorPaths, AllocateMakesOneDriverCallAndNoEvent) {
  // P-alloc: the allocation-ready event waits for a use on another stream.
  const auto calls = env.backend.calls();
  const std::size_t events = env.backend.live_event_count();
  auto b = r.allocate(64, env.s1);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(env.backend.calls(), calls + 1) << "alloc_async only";
  EXPECT_EQ(env.backend.live_event_count(), events);
  EXPECT_EQ(r.pending_use_event_count(b.value().ptr), std::optional<std::size_t>(0));
}

TEST_F(ErrorPaths, PrepareCreateReadyEventFaultChangesNothing) {
  const Snapshot before = snap();
  env.backend.arm_fault(0);  // create_event of the allocation-ready event
  auto st = r.prepare_block_use(id, env.s1, Access::Read);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("allocation-ready"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.prepare_block_use(id, env.s1, Access::Read).ok());
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::optional<std::size_t>(0)) << "the event was the call's alone";
}

TEST_F(ErrorPaths, PrepareRecordReadyEventFaultChangesNothing) {
  const Snapshot before = snap();
  env.backend.arm_fault(1);  // create_event, then record_event on the alloc stream
  auto st = r.prepare_block_use(id, env.s1, Access::Write);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("record allocation-ready"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before) << "the created event must be given back";
  ASSERT_TRUE(r.prepare_block_use(id, env.s1, Access::Write).ok());
  EXPECT_EQ(snap(), before) << "a successful prepare keeps no event either";
}

TEST(ErrorPathsFake, AllocatePointerCollisionChangesNothing) {
  FakeBackend fake;
  fake.fixed_ptr = 0xabc000;
  Resource<FakeBackend> r(fake);
  auto first = r.allocate(128, StreamId{0});
  ASSERT_TRUE(first.ok());
  const std::size_t events = fake.live_events;
  const std::size_t frees = fake.frees;
  auto second = r.allocate(256, StreamId{1});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().kind, ErrorKind::Driver);
  EXPECT_NE(second.error().message.find("pointer collision"), std::string::npos) << second.error();
  EXPECT_EQ(r.live_bytes(), 128u);
  EXPECT_EQ(r.live_block_count(), 1u);
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_use_event_count(0xabc000), std::optional<std::size_t>(0));
  EXPECT_EQ(fake.live_events, events) << "the colliding allocation holds no event";
  EXPECT_EQ(fake.frees, frees) << "freeing would release the live block";
  // The original block is intact and still usable.
  ASSERT_TRUE(r.deallocate(first.value()).ok());
  EXPECT_EQ(r.pending_free_bytes(), 128u);
}

// ---------------------------------------------------------------- prepare

TEST_F(ErrorPaths, PrepareWrongDeviceIsDriver) {
  const Snapshot before = snap();
  auto st = r.prepare_block_use(on_device(block, 3), env.s1, Access::Read);
  expect_kind(st, ErrorKind::Driver);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, PrepareUnknownStreamIsStreamMisuse) {
  const Snapshot before = snap();
  expect_kind(r.prepare_block_use(id, StreamId{42}, Access::Write), ErrorKind::StreamMisuse);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, PrepareStaleGenerationIsUseAfterFree) {
  const Snapshot before = snap();
  const BlockId stale = stale_id(block);
  auto st = r.prepare_block_use(stale, env.s1, Access::Read);
  expect_kind(st, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, stale.generation);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, PrepareAfterDeallocateIsUseAfterFree) {
  ASSERT_TRUE(r.deallocate(block).ok());
  const Snapshot before = snap();
  expect_kind(r.prepare_block_use(id, env.s1, Access::Read), ErrorKind::UseAfterFree);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, PrepareSameStreamQueuesNoWait) {
  const auto calls = env.backend.calls();
  ASSERT_TRUE(r.prepare_block_use(id, env.s0, Access::ReadWrite).ok());
  EXPECT_EQ(env.backend.calls(), calls) << "on the alloc stream: no allocation-ready event, no wait";
}

// P-elide is not an error path; it is here for the fixture's call counts.
// The backend calls a prepare or a deallocate makes (waits, and the free).
class ElidedWaits : public ErrorPaths {
 protected:
  std::uint64_t calls_of(const std::function<Status()>& call) {
    const auto before = env.backend.calls();
    const Status st = call();
    EXPECT_TRUE(st.ok()) << st.error();
    return env.backend.calls() - before;
  }
  std::uint64_t prepare(StreamId s, Access a) {
    return calls_of([&] { return r.prepare_block_use(id, s, a); });
  }
  void use(StreamId s, Access a) {
    ASSERT_TRUE(r.prepare_block_use(id, s, a).ok());
    ASSERT_TRUE(r.finish_block_use(id, s, a).ok());
  }
};

TEST_F(ElidedWaits, AStreamWaitsOncePerRecordOfAnEvent) {
  use(env.s0, Access::Write);  // last_write on s0
  EXPECT_EQ(prepare(env.s1, Access::Read), 1u) << "the wait on last_write";
  EXPECT_EQ(prepare(env.s1, Access::Read), 0u) << "s1 already waited on that record";
  use(env.s1, Access::Read);
  // The writer waits on s1's read; its finish records last_write again on
  // s0 (P-rerecord): a record no stream has waited on yet.
  EXPECT_EQ(prepare(env.s0, Access::Write), 1u) << "the wait on s1's read";
  ASSERT_TRUE(r.finish_block_use(id, env.s0, Access::Write).ok());
  EXPECT_EQ(prepare(env.s1, Access::Read), 1u) << "last_write re-recorded: s1 waits again (M22 would not)";
  EXPECT_EQ(prepare(env.s1, Access::ReadWrite), 0u) << "a writer on s1: last_write waited on, no read outstanding";
}

TEST_F(ElidedWaits, ThreeWaitingStreamsAreRememberedAndAFourthWaitsEveryTime) {
  const StreamId s3 = env.backend.add_stream("s3"), s4 = env.backend.add_stream("s4");
  use(env.s0, Access::Write);
  for (StreamId s : {env.s1, env.s2, s3, s4}) EXPECT_EQ(prepare(s, Access::Read), 1u) << s.value;
  for (StreamId s : {env.s1, env.s2, s3}) EXPECT_EQ(prepare(s, Access::Read), 0u) << s.value;
  EXPECT_EQ(prepare(s4, Access::Read), 1u) << "not remembered: a wait too many, never one too few";
}

TEST_F(ElidedWaits, AFreeSkipsAWaitItsStreamAlreadyQueued) {
  use(env.s1, Access::Write);                    // last_write on s1; the block's alloc stream is s0
  EXPECT_EQ(prepare(env.s0, Access::Read), 1u);  // s0 waits on it
  EXPECT_EQ(calls_of([&] { return r.deallocate(block); }), 1u) << "free_async only: s0 already waited";
}

TEST_F(ElidedWaits, AFailedWaitIsNotRemembered) {
  use(env.s0, Access::Write);
  env.backend.arm_fault(0);
  ASSERT_FALSE(r.prepare_block_use(id, env.s1, Access::Read).ok());
  EXPECT_EQ(prepare(env.s1, Access::Read), 1u) << "the failed wait queued nothing: s1 waits now";
}

TEST_F(ErrorPaths, PrepareWaitFaultOnLastWrite) {
  ASSERT_TRUE(r.prepare_block_use(id, env.s0, Access::Write).ok());
  ASSERT_TRUE(r.finish_block_use(id, env.s0, Access::Write).ok());  // a last_write on s0
  const Snapshot written = snap();
  env.backend.arm_fault(0);  // the wait on it
  auto st = r.prepare_block_use(id, env.s1, Access::Read);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("last_write"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), written);
  EXPECT_TRUE(r.prepare_block_use(id, env.s1, Access::Read).ok());
}

TEST_F(ErrorPaths, PrepareWaitFaultOnAllocationReadyEvent) {
  const Snapshot before = snap();
  env.backend.arm_fault(2);  // the allocation-ready event's create and record, then the wait on it
  auto st = r.prepare_block_use(id, env.s1, Access::Read);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("wait on allocation-ready"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  EXPECT_TRUE(r.prepare_block_use(id, env.s1, Access::Read).ok());
}

TEST_F(ErrorPaths, PrepareWaitFaultOnOutstandingRead) {
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Read).ok());
  const Snapshot before = snap();
  ASSERT_EQ(before.use_events.front(), std::optional<std::size_t>(1));
  // The allocation-ready event's create and record on s0, the wait on it,
  // then the wait on the read (s1).
  env.backend.arm_fault(3);
  auto st = r.prepare_block_use(id, env.s2, Access::Write);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("outstanding read"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  EXPECT_TRUE(r.prepare_block_use(id, env.s2, Access::Write).ok());
}

// ---------------------------------------------------------------- finish

TEST_F(ErrorPaths, FinishWrongDeviceIsDriver) {
  const Snapshot before = snap();
  expect_kind(r.finish_block_use(on_device(block, 1), env.s1, Access::Write), ErrorKind::Driver);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, FinishUnknownStreamIsStreamMisuse) {
  const Snapshot before = snap();
  expect_kind(r.finish_block_use(id, StreamId{9}, Access::Read), ErrorKind::StreamMisuse);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, FinishStaleGenerationIsUseAfterFreeWithoutBackendCalls) {
  const Snapshot before = snap();
  const auto calls = env.backend.calls();
  const BlockId stale = stale_id(block);
  auto st = r.finish_block_use(stale, env.s1, Access::Read);
  expect_kind(st, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, stale.generation);
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(env.backend.calls(), calls) << "validated before creating an event";
}

TEST_F(ErrorPaths, FinishCreateEventFault) {
  const Snapshot before = snap();
  env.backend.arm_fault(0);
  expect_fault(r.finish_block_use(id, env.s1, Access::Read));
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Read).ok());
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::optional<std::size_t>(1));  // the read alone (P-alloc)
}

TEST_F(ErrorPaths, FinishRecordFaultReleasesEvent) {
  const Snapshot before = snap();
  env.backend.arm_fault(1);  // create_event, then record_event
  expect_fault(r.finish_block_use(id, env.s1, Access::Write));
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Write).ok());
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::optional<std::size_t>(1));
}

TEST(ErrorPathsFake, FinishRevalidationFailureReleasesEvent) {
  FakeBackend fake;
  Resource<FakeBackend> r(fake);
  auto b = r.allocate(64, StreamId{0});
  ASSERT_TRUE(b.ok());
  const DeviceBlock block = b.value();
  // A racing deallocate lands between finish's validation and its
  // re-validation (while the event is recorded outside the lock).
  bool deallocated = false;
  fake.on_record = [&] { deallocated = r.deallocate(block).ok(); };
  auto st = r.finish_block_use(BlockId::of(block), StreamId{1}, Access::Read);
  ASSERT_TRUE(deallocated);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, block.generation);
  EXPECT_EQ(fake.live_events, 0u) << "finish's event and the block's events are all given back";
  EXPECT_EQ(r.live_block_count(), 0u);
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::nullopt);
  EXPECT_EQ(r.pending_free_bytes(), 64u);
}

// ---------------------------------------------------------------- deallocate

TEST_F(ErrorPaths, DeallocateWrongDeviceIsDriver) {
  const Snapshot before = snap();
  DeviceBlock other = block;
  other.device_ordinal = 2;
  expect_kind(r.deallocate(other), ErrorKind::Driver);
  EXPECT_EQ(snap(), before);
  EXPECT_TRUE(r.deallocate(block).ok());
}

TEST_F(ErrorPaths, DeallocateUnresolvableAllocStreamLeavesEntry) {
  auto b = r.allocate(64, env.s2);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(r.finish_block_use(BlockId::of(b.value()), env.s1, Access::Read).ok());
  env.backend.remove_stream(env.s2);
  const Snapshot before = snapshot_of(r, env.backend, b.value().ptr);
  auto st = r.deallocate(b.value());
  expect_kind(st, ErrorKind::StreamMisuse);
  EXPECT_EQ(snapshot_of(r, env.backend, b.value().ptr), before);
  EXPECT_EQ(before.use_events.front(), std::optional<std::size_t>(1));
  // The entry is untouched: it still tracks uses and is still live.
  EXPECT_TRUE(r.finish_block_use(BlockId::of(b.value()), env.s1, Access::Read).ok());
  // A first use on another stream needs the allocation-ready event on the
  // alloc stream (P-alloc), which is gone: refused, and nothing changes.
  const Snapshot held = snapshot_of(r, env.backend, b.value().ptr);
  auto prepared = r.prepare_block_use(BlockId::of(b.value()), env.s1, Access::Read);
  expect_kind(prepared, ErrorKind::StreamMisuse);
  EXPECT_EQ(snapshot_of(r, env.backend, b.value().ptr), held);
}

TEST_F(ErrorPaths, DeallocateStaleGenerationIsUseAfterFree) {
  const Snapshot before = snap();
  DeviceBlock stale = block;
  stale.generation = Generation::next();
  auto st = r.deallocate(stale);
  expect_kind(st, ErrorKind::UseAfterFree);
  EXPECT_EQ(st.error().generation, stale.generation);
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, DoubleDeallocateIsUseAfterFree) {
  ASSERT_TRUE(r.deallocate(block).ok());
  const Snapshot before = snap();
  expect_kind(r.deallocate(block), ErrorKind::UseAfterFree);
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(r.pending_free_bytes(), 512u) << "counted once";
}

TEST_F(ErrorPaths, DeallocateWaitFaultOnLastWrite) {
  ASSERT_TRUE(r.prepare_block_use(id, env.s1, Access::Write).ok());
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Write).ok());
  const Snapshot before = snap();
  env.backend.arm_fault(0);
  auto st = r.deallocate(block);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("last_write"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.deallocate(block).ok());
  EXPECT_EQ(r.pending_free_bytes(), 512u);
  EXPECT_EQ(r.live_block_count(), 0u);
}

TEST_F(ErrorPaths, DeallocateWaitFaultOnRead) {
  ASSERT_TRUE(r.finish_block_use(id, env.s1, Access::Read).ok());
  ASSERT_TRUE(r.finish_block_use(id, env.s2, Access::Read).ok());
  const Snapshot before = snap();
  env.backend.arm_fault(1);  // last_write is on the alloc stream: the reads are calls 0 and 1
  auto st = r.deallocate(block);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("outstanding read"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.deallocate(block).ok());
  EXPECT_EQ(r.pending_free_bytes(), 512u);
}

TEST_F(ErrorPaths, DeallocateFreeAsyncFault) {
  const Snapshot before = snap();
  env.backend.arm_fault(0);  // no waits needed: free_async is the first call
  auto st = r.deallocate(block);
  expect_fault(st);
  EXPECT_NE(st.error().message.find("free_async"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(r.deallocate(block).ok());
  EXPECT_EQ(r.live_bytes(), 0u);
  EXPECT_EQ(r.pending_free_bytes(), 512u);
  EXPECT_EQ(r.pending_per_stream_total(), 512u);
}

// ---------------------------------------------------------------- reap

TEST_F(ErrorPaths, ReapSyncFaultRestoresEntries) {
  ASSERT_TRUE(r.deallocate(block).ok());
  const Snapshot before = snap();
  env.backend.arm_fault(0);
  expect_fault(r.reap_pending());
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(r.pending_per_stream_total(), 512u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
}

TEST_F(ErrorPaths, ReapCountsUnresolvableStreamAsSynchronized) {
  auto b = r.allocate(100, env.s2);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  env.backend.remove_stream(env.s2);
  const auto calls = env.backend.calls();
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(env.backend.calls(), calls) << "nothing to synchronize";
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
}

TEST_F(ErrorPaths, ReapKeepsBytesOfDeallocationsAfterFailure) {
  ASSERT_TRUE(r.deallocate(block).ok());
  env.backend.arm_fault(0);
  expect_fault(r.reap_pending());
  auto b = r.allocate(8, env.s1);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  EXPECT_EQ(r.pending_free_bytes(), 520u);
  EXPECT_EQ(r.pending_per_stream_total(), 520u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

// ---------------------------------------------------------------- mutants
// The checks above tell the correct protocol from the mutants that break
// error atomicity: each of these mutants visibly changes state on a failure.

TEST(ErrorPathsMutants, M7ResetsPendingTotalOnPartialReap) {
  testing::SimEnv env;
  Resource<sim::SimBackend, MutantSet<MutantId::M7>> r(env.backend);
  auto a = r.allocate(1024, env.s1);
  auto b = r.allocate(2048, env.s2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  env.backend.arm_fault(1);
  ASSERT_FALSE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_per_stream_total(), 2048u);
  EXPECT_NE(r.pending_free_bytes(), r.pending_per_stream_total()) << "M7 must break P3";
}

TEST(ErrorPathsMutants, M8ForgetsUnsyncedEntries) {
  testing::SimEnv env;
  Resource<sim::SimBackend, MutantSet<MutantId::M8>> r(env.backend);
  auto a = r.allocate(512, env.s0);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  env.backend.arm_fault(0);
  ASSERT_FALSE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 512u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u) << "M8 must lose the entry";
}

TEST(ErrorPathsMutants, M10LosesEntryWhenDeallocateWaitFails) {
  testing::SimEnv env;
  Resource<sim::SimBackend, MutantSet<MutantId::M10>> r(env.backend);
  auto a = r.allocate(512, env.s0);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(r.finish_block_use(BlockId::of(a.value()), env.s1, Access::Write).ok());
  const Snapshot before = snapshot_of(r, env.backend, a.value().ptr);
  env.backend.arm_fault(0);
  ASSERT_FALSE(r.deallocate(a.value()).ok());
  EXPECT_NE(snapshot_of(r, env.backend, a.value().ptr), before) << "M10 must break error atomicity";
  EXPECT_EQ(r.live_block_count(), 0u);
}

// ---------------------------------------------------------------- LaunchRecorder

using Recorder = LaunchRecorder<>;

TEST_F(ErrorPaths, RecorderPreflightPropagatesPrepareError) {
  Recorder rec(env.s1, RecorderMode::Strict);
  rec.read(&block);
  ASSERT_TRUE(r.deallocate(block).ok());
  const Snapshot before = snap();
  auto st = rec.preflight(r);
  expect_kind(st, ErrorKind::UseAfterFree);
  EXPECT_FALSE(rec.preflighted());
  EXPECT_EQ(snap(), before);
  // Commit is still refused: the preflight never succeeded.
  expect_kind(rec.commit(r), ErrorKind::StreamMisuse);
}

TEST_F(ErrorPaths, RecorderPreflightFaultThenRetry) {
  Recorder rec(env.s1, RecorderMode::Strict);
  rec.write(&block);
  const Snapshot before = snap();
  env.backend.arm_fault(0);
  expect_fault(rec.preflight(r));
  EXPECT_FALSE(rec.preflighted());
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
}

TEST_F(ErrorPaths, RecorderCommitPropagatesFinishError) {
  Recorder rec(env.s1, RecorderMode::Strict);
  rec.read(&block);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(r.deallocate(block).ok());
  const Snapshot before = snap();
  expect_kind(rec.commit(r), ErrorKind::UseAfterFree);
  EXPECT_FALSE(rec.committed());
  EXPECT_EQ(snap(), before);
  rec.abandon();
}

TEST_F(ErrorPaths, RecorderCommitFaultThenRetry) {
  Recorder rec(env.s1, RecorderMode::Permissive);
  rec.read(&block);
  ASSERT_TRUE(rec.preflight(r).ok());
  const Snapshot before = snap();
  env.backend.arm_fault(1);  // create_event, then record_event
  expect_fault(rec.commit(r));
  EXPECT_FALSE(rec.committed());
  EXPECT_EQ(snap(), before);
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_TRUE(rec.committed());
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::optional<std::size_t>(1));
}

TEST_F(ErrorPaths, RecorderStrictRejectionAlsoFailsCommit) {
  Recorder rec(env.s1, RecorderMode::Strict);
  rec.read(&block);
  rec.write(nullptr);
  const Snapshot before = snap();
  auto st = rec.commit(r);
  expect_kind(st, ErrorKind::StreamMisuse);
  EXPECT_NE(st.error().message.find("untracked buffer rejected"), std::string::npos) << st.error();
  EXPECT_EQ(snap(), before);
}

TEST_F(ErrorPaths, RecorderFirstRejectionWins) {
  Recorder rec(env.s1, RecorderMode::Strict);
  rec.write(nullptr);
  rec.read(nullptr, /*external=*/true);
  auto st = rec.preflight(r);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("LaunchRecorder::write"), std::string::npos) << st.error();
  EXPECT_EQ(st.error().message.find("external memory"), std::string::npos) << st.error();
}

TEST_F(ErrorPaths, RecorderRegistrationAfterEmptyPreflightRejected) {
  Recorder rec(env.s1, RecorderMode::Permissive);
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(&block);
  EXPECT_EQ(rec.recorded_count(), 0u);
  auto st = rec.commit(r);
  expect_kind(st, ErrorKind::StreamMisuse);
  EXPECT_NE(st.error().message.find("recorded after preflight"), std::string::npos) << st.error();
  EXPECT_EQ(r.pending_use_event_count(block.ptr), std::optional<std::size_t>(0));
}

TEST_F(ErrorPaths, RecorderEmptyPreflightOnNonTrackingResourceOk) {
  NonTrackingResource<sim::SimBackend> direct(env.backend);
  Recorder rec(env.s1, RecorderMode::Strict);
  EXPECT_TRUE(rec.preflight(direct).ok());
  EXPECT_TRUE(rec.commit(direct).ok());
}

}  // namespace
}  // namespace streamcheck
