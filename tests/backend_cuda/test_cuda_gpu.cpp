// The CUDA backend on real streams (label `gpu`): completion fences, the
// stamp kernels, event/stream pooling, injected faults, and the protocol
// property instantiated for the CUDA backend. Seed 000's and 001's cases run
// here through the conformance suites (test_resource_conformance.cpp).
// Without a GPU every test reports Skipped.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend_cuda/cuda_backend.h"
#include "backend_cuda/guard_memory.h"
#include "backend_sim/schedule.h"
#include "model/debug_guard.h"
#include "model/pool_backend.h"
#include "props/client_gen.h"
#include "props/harness.h"
#include "props/protocol_property.h"
#include "tests/backend_cuda/gpu_device.h"

namespace streamcheck::cuda {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = device.unavailable()) GTEST_SKIP() << *why;
    backend = &device.backend();
    s0 = backend->add_stream("s0");
    s1 = backend->add_stream("s1");
    s2 = backend->add_stream("s2");
  }
  StreamRef ref(StreamId s) const { return *backend->resolve_stream(s); }

  GpuDevice device;
  CudaBackend* backend = nullptr;
  StreamId s0{}, s1{}, s2{};
};

// --- completion fences

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
  EXPECT_TRUE(a.error().injected) << a.error();
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
  rc::Random programs(11);
  for (int p = 0; p < 20; ++p) {
    const auto program = props::gen_client_program()(programs.split(), 39).value();
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

// --- PoolResource (model/pool_backend.h) on real streams: the same
// property and random programs with the pool under the resource. Same-stream
// reuse makes no driver call there, so only the stamp kernels see whether a
// block handed out again was still in use.

using PooledCuda = PooledBackend<CudaBackend>;

TEST_F(Gpu, ProtocolPropertyThroughThePoolOnTheGpu) {
  const bool ok = rc::check("P2-P5, P9 through the pool on real CUDA streams", [] {
    CudaBackendOptions o;
    o.policy = PoolPolicy::from_bits(*rc::gen::inRange<std::uint32_t>(0, 16));
    auto b = CudaBackend::create_as<PooledCuda>(PoolOptions{}, o);
    RC_ASSERT(b.ok());
    props::Harness<PooledCuda> harness(*b.value());
    props::check_protocol(harness);
  });
  EXPECT_TRUE(ok);
}

TEST_F(Gpu, RandomProgramsKeepEveryPropertyThroughThePoolOnTheGpu) {
  sim::SplitMix64 rng(13);
  rc::Random programs(13);
  std::size_t steals = 0;
  for (int p = 0; p < 20; ++p) {
    const auto program = props::gen_client_program()(programs.split(), 39).value();
    auto b = CudaBackend::create_as<PooledCuda>(PoolOptions{}, CudaBackendOptions{});
    ASSERT_TRUE(b.ok());
    b.value()->force_delays({{rng.below(3), rng.below(12)}, {rng.below(3), rng.below(12)}}, 200'000);
    props::Harness<PooledCuda> harness(*b.value());
    for (const auto& op : program) {
      auto v = harness.apply(op);
      ASSERT_FALSE(v) << *v << "\n" << props::show(program);
    }
    steals += b.value()->steals();
    auto v = harness.finish();
    ASSERT_FALSE(v) << *v << "\n" << props::show(program);
  }
  EXPECT_GT(steals, 0u);  // blocks did cross streams
}

// --- the debug tier (model/debug_guard.h) on real memory: canaries and
// poison written and checked by kernels, verdicts read from the device.

TEST_F(Gpu, TheDebugTierCatchesAnOverrunAndAUseAfterFreeAtRunTime) {
  Resource<CudaBackend> resource(*backend);
  auto memory = CudaGuardMemory::create(*backend);
  ASSERT_TRUE(memory.ok()) << memory.error();
  DebugGuardOptions options;
  options.quarantine_frees = 2;
  DebugGuardResource<Resource<CudaBackend>, CudaGuardMemory> tier(resource, *memory.value(), options);
  auto use = [&](const DeviceBlock& b, StreamId s, Access a, std::uint64_t bytes) {
    ASSERT_TRUE(tier.prepare_block_use(BlockId::of(b), s, a));
    backend->launch(ref(s), {KernelAccess{b.ptr, bytes, a, {}}}, "use");
    ASSERT_TRUE(tier.finish_block_use(BlockId::of(b), s, a));
  };
  // A correct program: each block written on s0, read on s1 and s2, freed.
  for (std::uint64_t i = 0; i < 200; ++i) {
    auto b = tier.allocate(1000 + 8 * i, s0);
    ASSERT_TRUE(b.ok()) << b.error();
    use(b.value(), s0, Access::Write, b.value().bytes);
    use(b.value(), s1, Access::Read, b.value().bytes);
    use(b.value(), s2, Access::Read, b.value().bytes);
    ASSERT_TRUE(tier.deallocate(b.value()));
  }
  ASSERT_TRUE(tier.release_quarantine());
  ASSERT_TRUE(tier.findings().empty()) << tier.findings().front().to_string();
  backend->drain();
  for (const auto& p : backend->new_problems()) ADD_FAILURE() << "the correct program: " << p.detail;

  // An overrun: a kernel on s1 writes 16 bytes past the end of a block.
  auto over = tier.allocate(1000, s0).value();
  use(over, s1, Access::Write, 1016);
  ASSERT_TRUE(tier.deallocate(over));
  // A use after free: a block freed on s0 (its poison is down once s0 is
  // synchronized), then written through a stale pointer by a kernel on s1.
  auto stale = tier.allocate(4096, s0).value();
  use(stale, s0, Access::Write, 4096);
  ASSERT_TRUE(tier.deallocate(stale));
  ASSERT_TRUE(backend->synchronize_stream(ref(s0)));
  backend->launch(ref(s1), {KernelAccess{stale.ptr + 512, 1024, Access::Write, {}}}, "stale write");
  ASSERT_TRUE(backend->synchronize_stream(ref(s1)));
  EXPECT_EQ(tier.quarantined_blocks(), 2u);  // K = 2: both still held
  ASSERT_TRUE(tier.release_quarantine());

  const auto findings = tier.findings();
  ASSERT_EQ(findings.size(), 2u);
  for (const auto& f : findings) std::cout << "  " << f.to_string() << "\n";
  // A byte of a kernel's stamp may happen to equal the pattern: the first
  // changed byte is in the first word written, and most bytes changed.
  const auto expect = [](const GuardFinding& f, GuardFindingKind kind, const DeviceBlock& block, std::int64_t first,
                         std::uint64_t written) {
    EXPECT_EQ(f.kind, kind);
    EXPECT_EQ(f.generation, block.generation);
    EXPECT_GE(f.first_changed, first);
    EXPECT_LT(f.first_changed, first + 8);
    EXPECT_GE(f.changed_bytes, written / 8);
    EXPECT_LE(f.changed_bytes, written);
  };
  expect(findings[0], GuardFindingKind::CanaryOverwritten, over, 1000, 16);
  expect(findings[1], GuardFindingKind::WriteAfterFree, stale, 512, 1024);
  ASSERT_TRUE(resource.reap_pending());
  EXPECT_EQ(tier.bytes_outstanding(), 0u);
  EXPECT_EQ(tier.held_bytes(), 0u);
  EXPECT_EQ(memory.value()->free_slots(), 4096u);  // every verdict read
  backend->drain();
  for (const auto& p : backend->new_problems()) ADD_FAILURE() << p.detail;
}

// --- many host threads: model/resource.h promises that every public member
// may be called from many host threads at once. Four threads share one
// resource, each allocating on its own stream, writing there and reading on
// the next thread's stream, so allocate, deallocate, events and waits run at
// once on the backend (without stamp validation, whose host bookkeeping is
// the trace replay's and single-threaded).

TEST(GpuThreads, ResourceCallsFromManyHostThreadsAtOnce) {
  CudaBackendOptions options;
  options.stamp_pool_ops = false;
  GpuDevice device(options);
  if (auto why = device.unavailable()) GTEST_SKIP() << *why;
  CudaBackend& backend = device.backend();
  constexpr int kThreads = 4;
  constexpr int kIterations = 3000;
  std::vector<StreamId> streams;
  for (int t = 0; t < kThreads; ++t) streams.push_back(backend.add_stream("t" + std::to_string(t)));
  Resource<CudaBackend> resource(backend);
  std::mutex first_mutex;
  std::string first_failure;
  std::atomic<int> failures{0};
  const auto ok = [&](const auto& result, const char* call) {
    if (result.ok()) return true;
    if (failures.fetch_add(1) == 0) {
      std::lock_guard lock(first_mutex);
      first_failure = std::string(call) + ": " + result.error().to_string();
    }
    return false;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const StreamId mine = streams[t], next = streams[(t + 1) % kThreads];
      for (int i = 0; i < kIterations; ++i) {
        auto b = resource.allocate(4096 + 256 * (i % 4), mine);
        if (!ok(b, "allocate")) return;
        const BlockId id = BlockId::of(b.value());
        if (!ok(resource.prepare_block_use(id, mine, Access::Write), "prepare write") ||
            !ok(resource.finish_block_use(id, mine, Access::Write), "finish write") ||
            !ok(resource.prepare_block_use(id, next, Access::Read), "prepare read") ||
            !ok(resource.finish_block_use(id, next, Access::Read), "finish read") ||
            !ok(resource.deallocate(b.value()), "deallocate"))
          return;
        if (i % 256 == 255 && !ok(resource.reap_pending(), "reap_pending")) return;
      }
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << "first: " << first_failure;
  ASSERT_TRUE(resource.reap_pending().ok());
  EXPECT_EQ(resource.live_block_count(), 0u);
  EXPECT_EQ(resource.bytes_outstanding(), 0u);
  EXPECT_EQ(backend.live_event_count(), 0u) << "every event given back (P9)";
}

}  // namespace
}  // namespace streamcheck::cuda
