// The core on real CUDA streams (label `gpu`): seed 000's and 001's
// GPU-gated tests, the stamp kernels, event/stream pooling, and the
// protocol property instantiated for the CUDA backend. Without a GPU every
// test reports Skipped.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <memory>

#include "backend_cuda/cuda_backend.h"
#include "model/launch_recorder.h"
#include "model/non_tracking_resource.h"
#include "model/resource.h"
#include "props/harness.h"
#include "props/protocol_property.h"

namespace streamcheck::cuda {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    auto b = CudaBackend::create(options());
    if (!b) GTEST_SKIP() << "no usable GPU: " << b.error().to_string();
    backend = std::move(b).value();
    s0 = backend->add_stream("s0");
    s1 = backend->add_stream("s1");
    s2 = backend->add_stream("s2");
  }
  virtual CudaBackendOptions options() const { return {}; }
  StreamRef ref(StreamId s) const { return *backend->resolve_stream(s); }

  std::unique_ptr<CudaBackend> backend;
  StreamId s0{}, s1{}, s2{};
};

// --- seed 000 (the resource on the GPU)

TEST_F(Gpu, Seed000AllocateDeallocateRoundTrip) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(2048, s0);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b.value().bytes, 2048u);
  EXPECT_EQ(b.value().alloc_stream, s0);
  EXPECT_NE(b.value().ptr, 0u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  EXPECT_EQ(r.live_bytes(), 2048u);
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  EXPECT_EQ(r.live_bytes(), 0u);
  EXPECT_EQ(r.pending_free_bytes(), 2048u);
  EXPECT_EQ(r.bytes_outstanding(), 2048u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TEST_F(Gpu, Seed000AllocateOnANonDefaultStream) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(1024, s2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b.value().alloc_stream, s2);
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  EXPECT_EQ(r.bytes_outstanding(), 1024u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.bytes_outstanding(), 0u);
}

TEST_F(Gpu, Seed000UnknownStreamRejected) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(64, StreamId{99});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::StreamMisuse);
}

TEST_F(Gpu, Seed000DeallocateUnknownBlockIsUseAfterFree) {
  Resource<CudaBackend> r(*backend);
  DeviceBlock bogus{0xfeedface, 0, s0, 16, 1, {}, Generation::next(), BlockState::Live};
  auto st = r.deallocate(bogus);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::UseAfterFree);
}

TEST_F(Gpu, Seed000ReapRestoresUnsyncedStreamsWhenASyncFails) {
  Resource<CudaBackend> r(*backend);
  auto a = r.allocate(1024, s1);
  auto b = r.allocate(2048, s2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  backend->arm_fault(0);  // the first synchronize fails
  auto st = r.reap_pending();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(CudaBackend::kInjectedFault), std::string::npos);
  EXPECT_EQ(r.pending_free_bytes(), 3072u);
  EXPECT_EQ(r.pending_per_stream_total(), 3072u);
  ASSERT_TRUE(r.reap_pending().ok());
  EXPECT_EQ(r.pending_free_bytes(), 0u);
  EXPECT_EQ(r.pending_per_stream_total(), 0u);
}

// --- seed 001 (the recorder on the GPU)

TEST_F(Gpu, Seed001EmptyCommitIsOkInBothModes) {
  Resource<CudaBackend> r(*backend);
  LaunchRecorder<> p(s1, RecorderMode::Permissive);
  LaunchRecorder<> s(s1, RecorderMode::Strict);
  EXPECT_TRUE(p.commit(r).ok());
  EXPECT_TRUE(s.commit(r).ok());
}

TEST_F(Gpu, Seed001StrictRejectsUntrackedAtPreflight) {
  Resource<CudaBackend> r(*backend);
  LaunchRecorder<> rec(s1, RecorderMode::Strict);
  rec.read(nullptr);
  auto st = rec.preflight(r);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("untracked buffer rejected"), std::string::npos);
}

TEST_F(Gpu, Seed001PreflightRejectsNonTrackingResource) {
  NonTrackingResource<CudaBackend> direct(*backend);
  auto b = direct.allocate(64, s0);
  ASSERT_TRUE(b.ok());
  LaunchRecorder<> rec(s1, RecorderMode::Strict);
  rec.read(&b.value());
  auto st = rec.preflight(direct);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("does not support cross-stream use tracking"), std::string::npos);
  ASSERT_TRUE(direct.deallocate(b.value()).ok());
}

TEST_F(Gpu, Seed001PreflightLaunchCommitThenReadOnAnotherStreamSeesTheWrite) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(1 << 20, s0);
  ASSERT_TRUE(b.ok());
  {
    LaunchRecorder<> rec(s1, RecorderMode::Strict);
    rec.write(&b.value());
    ASSERT_TRUE(rec.preflight(r).ok());
    backend->launch(ref(s1), {KernelAccess{b.value().ptr, b.value().bytes, Access::Write, {}}}, "producer");
    ASSERT_TRUE(rec.commit(r).ok());
  }
  {
    LaunchRecorder<> rec(s2, RecorderMode::Strict);
    rec.read(&b.value());
    ASSERT_TRUE(rec.preflight(r).ok());
    backend->launch(ref(s2), {KernelAccess{b.value().ptr, b.value().bytes, Access::Read, {}}}, "consumer");
    ASSERT_TRUE(rec.commit(r).ok());
  }
  ASSERT_TRUE(r.deallocate(b.value()).ok());
  ASSERT_TRUE(r.reap_pending().ok());
  backend->drain();
  EXPECT_EQ(backend->mismatches_total(), 0u);
}

TEST_F(Gpu, Seed001CommitWithoutPreflightIsRejected) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(64, s0);
  ASSERT_TRUE(b.ok());
  LaunchRecorder<> rec(s1, RecorderMode::Strict);
  rec.read(&b.value());
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("without a successful preflight"), std::string::npos);
  ASSERT_TRUE(r.deallocate(b.value()).ok());
}

TEST_F(Gpu, Seed001RecordAfterPreflightIsRejected) {
  Resource<CudaBackend> r(*backend);
  auto a = r.allocate(64, s0);
  auto b = r.allocate(64, s0);
  ASSERT_TRUE(a.ok() && b.ok());
  LaunchRecorder<> rec(s1, RecorderMode::Strict);
  rec.read(&a.value());
  ASSERT_TRUE(rec.preflight(r).ok());
  rec.read(&b.value());
  auto st = rec.commit(r);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("recorded after preflight"), std::string::npos);
  rec.abandon();
  ASSERT_TRUE(r.deallocate(a.value()).ok());
  ASSERT_TRUE(r.deallocate(b.value()).ok());
}

TEST_F(Gpu, Seed001PermissiveSkipsUntrackedSilently) {
  Resource<CudaBackend> r(*backend);
  LaunchRecorder<> rec(s1, RecorderMode::Permissive);
  rec.read(nullptr);
  EXPECT_EQ(rec.recorded_count(), 0u);
  EXPECT_TRUE(rec.preflight(r).ok());
  EXPECT_TRUE(rec.commit(r).ok());
}

TEST_F(Gpu, Seed001ReadThenWriteOfOneBlockDedupsToReadWrite) {
  Resource<CudaBackend> r(*backend);
  auto b = r.allocate(64, s0);
  ASSERT_TRUE(b.ok());
  LaunchRecorder<> rec(s1, RecorderMode::Strict);
  rec.read(&b.value());
  rec.write(&b.value());
  ASSERT_EQ(rec.deduped_uses().size(), 1u);
  EXPECT_EQ(rec.deduped_uses().front().access, Access::ReadWrite);
  ASSERT_TRUE(rec.preflight(r).ok());
  ASSERT_TRUE(rec.commit(r).ok());
  EXPECT_EQ(r.pending_use_event_count(b.value().ptr), 1u);  // the write replaced the alloc-ready event
  ASSERT_TRUE(r.deallocate(b.value()).ok());
}

TEST_F(Gpu, CompletionFenceReportsReadinessAndWaits) {
  ASSERT_TRUE(backend->enqueue_delay(ref(s1), 20'000'000).ok());  // 20 ms of work
  auto f = backend->fence(ref(s1));
  ASSERT_TRUE(f.ok()) << f.error();
  auto early = f.value().is_ready();
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early.value());
  ASSERT_TRUE(f.value().wait().ok());
  auto late = f.value().is_ready();
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(late.value());
}

// --- the kernels really check: a missing wait, forced, corrupts a read

TEST_F(Gpu, StampKernelsCountAForcedMissingWait) {
  auto a = backend->alloc_async(1 << 20, ref(s0));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(backend->synchronize_stream(ref(s0)).ok());
  // s1's write (its op 0) is held back 5 ms; s2 reads without waiting.
  backend->force_delays({{1, 0}}, 5'000'000);
  backend->launch(ref(s1), {KernelAccess{a.value(), 1 << 20, Access::Write, {}}}, "late writer");
  backend->launch(ref(s2), {KernelAccess{a.value(), 1 << 20, Access::Read, {}}}, "early reader");
  backend->drain();
  EXPECT_GT(backend->mismatches_total(), 0u);
  ASSERT_TRUE(backend->free_async(a.value(), ref(s0)).ok());
}

TEST_F(Gpu, StampKernelsSeeNoMismatchWhenOrdered) {
  auto a = backend->alloc_async(1 << 20, ref(s0));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(backend->synchronize_stream(ref(s0)).ok());
  backend->force_delays({{1, 0}}, 5'000'000);
  backend->launch(ref(s1), {KernelAccess{a.value(), 1 << 20, Access::Write, {}}}, "late writer");
  auto e = backend->create_event();
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(backend->record_event(e.value(), ref(s1)).ok());
  ASSERT_TRUE(backend->wait_event(ref(s2), e.value()).ok());
  backend->launch(ref(s2), {KernelAccess{a.value(), 1 << 20, Access::Read, {}}}, "reader after wait");
  backend->drain();
  EXPECT_EQ(backend->mismatches_total(), 0u);
  ASSERT_TRUE(backend->free_async(a.value(), ref(s0)).ok());
}

// --- launch resources

TEST_F(Gpu, EventsArePooledWithABoundedCache) {
  {
    std::vector<CudaBackend::Event> events;
    for (int i = 0; i < 300; ++i) {
      auto e = backend->create_event();
      ASSERT_TRUE(e.ok());
      events.push_back(std::move(e).value());
    }
    EXPECT_EQ(backend->live_event_count(), 300u);
  }
  EXPECT_EQ(backend->live_event_count(), 0u);
  EXPECT_EQ(backend->cached_events(), CudaBackendOptions{}.max_cached_events);
  auto again = backend->create_event();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(backend->cached_events(), CudaBackendOptions{}.max_cached_events - 1);
}

TEST_F(Gpu, StreamsAreLeasedAndGivenBack) {
  const std::size_t before = backend->cached_streams();
  const StreamId extra = backend->add_stream("extra");
  ASSERT_TRUE(backend->resolve_stream(extra));
  backend->remove_stream(extra);
  EXPECT_FALSE(backend->resolve_stream(extra));
  EXPECT_EQ(backend->cached_streams(), before + 1);
}

TEST_F(Gpu, InjectedFaultsTouchNothing) {
  backend->arm_fault(0);
  auto a = backend->alloc_async(64, ref(s0));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find(CudaBackend::kInjectedFault), std::string::npos);
  auto b = backend->alloc_async(64, ref(s0));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(backend->free_async(b.value(), ref(s0)).ok());
}

// --- the protocol property, instantiated for the CUDA backend (P1 is not
// observable on hardware; P2 is checked by the stamp kernels at teardown)

TEST_F(Gpu, ProtocolPropertyOnTheGpu) {
  const bool ok = rc::check("P2-P5, P9 on real CUDA streams", [] {
    const auto policy = *rc::gen::inRange<std::uint32_t>(0, 16);
    CudaBackendOptions o;
    o.policy = PoolPolicy::from_bits(policy);
    auto b = CudaBackend::create(o);
    RC_ASSERT(b.ok());
    props::Harness<CudaBackend> harness(*b.value());
    props::check_protocol(harness);
  });
  EXPECT_TRUE(ok);
}

TEST_F(Gpu, RandomProgramsKeepEveryPropertyOnTheGpu) {
  sim::SplitMix64 rng(11);
  for (int p = 0; p < 20; ++p) {
    const auto program = props::random_program(rng, 40);
    CudaBackendOptions o;
    o.policy = PoolPolicy::from_bits(static_cast<std::uint32_t>(p % 16));
    auto b = CudaBackend::create(o);
    ASSERT_TRUE(b.ok());
    b.value()->force_delays({{rng.below(3), rng.below(12)}, {rng.below(3), rng.below(12)}}, 200'000);
    props::Harness<CudaBackend> harness(*b.value());
    for (const auto& op : program) {
      auto v = harness.apply(op);
      ASSERT_FALSE(v) << *v << "\n" << props::show(program);
    }
    auto v = harness.finish();
    ASSERT_FALSE(v) << *v << "\n" << props::show(program);
  }
}

}  // namespace
}  // namespace streamcheck::cuda
