// What the conformance suites (resource_suite.h, recorder_suite.h,
// memory_resource_suite.h) run on: a device, that is a backend that may be
// unavailable (no GPU), and a stack of resources built on it (the resource
// and each decorator over it); each stack is one type parameter. The suites
// are written once; a backend's test file only names its device and
// instantiates them (RMM's typed suites):
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(SimResource, ResourceSuite, TrackingStacks<SimDevice>);
//
// CTest names a case <prefix>.<case><stack type>, e.g.
// SimResource.ReapDrainsNormally<...BudgetStack<...TrackingStack<...SimDevice> > >.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/budget_resource.h"
#include "model/debug_guard.h"
#include "model/kernel_access.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/non_tracking_resource.h"
#include "model/pool_backend.h"
#include "model/resource.h"
#include "model/types.h"

namespace streamcheck::conformance {

/// A backend the suites can run on. `unavailable()` says why the backend
/// could not be opened (the suites then report Skipped, never pass);
/// `backend()` may be called only when it is nullopt. Besides the Backend
/// concept the suites launch work and ask the backend's own oracle (the HB
/// checker, the GPU's stamp kernels) for problems after drain().
template <class D>
concept Device = requires(D& d, const D& cd, typename D::BackendType::StreamRef s, std::vector<KernelAccess> accesses,
                          std::uint32_t nth) {
  requires Backend<typename D::BackendType>;
  { cd.unavailable() } -> std::same_as<std::optional<std::string>>;
  { d.backend() } -> std::same_as<typename D::BackendType&>;
  d.backend().add_stream("s");
  d.backend().launch(s, accesses, "kernel");
  d.backend().arm_fault(nth);
  { d.backend().live_event_count() } -> std::convertible_to<std::size_t>;
  d.backend().drain();
  { d.backend().new_problems().empty() } -> std::convertible_to<bool>;
};

/// A backend that counts its calls (the simulator) lets a suite check that a
/// call queued no work at all.
template <class B>
concept CountsCalls = requires(const B& b) {
  { b.calls() } -> std::convertible_to<std::uint64_t>;
};

/// Whether `e` is the fault the backend was armed to inject.
inline bool is_injected_fault(const ResourceError& e) { return e.injected; }

// --- resource stacks: each owns its resources, built on one backend. top()
// is the resource under test; tracked() (tracking stacks only) the Resource
// underneath, whose counters the suites read; tracked_address(block) where
// that Resource keeps a block of top()'s, and writes_at_allocation whether
// top()'s allocate already made a tracked write of it (the debug tier's
// canary fill: the block has a last write from the start).

/// Large enough that no suite case is refused by a BudgetResource.
inline constexpr std::size_t kAmpleBudget = std::size_t{1} << 34;

/// A resource built directly on the device's backend.
template <Device D, class R>
struct BaseStack {
  using DeviceType = D;
  using BackendType = typename D::BackendType;
  explicit BaseStack(BackendType& backend) : resource(backend) {}
  R& top() { return resource; }
  R resource;
};

template <Device D>
struct TrackingStack : BaseStack<D, Resource<typename D::BackendType>> {
  static constexpr bool tracks = true;
  static constexpr bool writes_at_allocation = false;
  using BaseStack<D, Resource<typename D::BackendType>>::BaseStack;
  Resource<typename D::BackendType>& tracked() { return this->resource; }
  std::uint64_t tracked_address(const DeviceBlock& b) const { return b.ptr; }
};

template <Device D>
struct NonTrackingStack : BaseStack<D, NonTrackingResource<typename D::BackendType>> {
  static constexpr bool tracks = false;
  using BaseStack<D, NonTrackingResource<typename D::BackendType>>::BaseStack;
};

/// The performance tier: the core Resource over PoolResource's pool
/// (model/pool_backend.h) over the device's backend, as `resource pool`
/// builds it; at the end every cached block goes back to the backend.
template <Device D>
struct PoolStack {
  using DeviceType = D;
  using BackendType = typename D::BackendType;
  using Pool = StreamOrderedPool<BackendType>;
  static constexpr bool tracks = true;
  static constexpr bool writes_at_allocation = false;
  explicit PoolStack(BackendType& backend) : pool(backend) { resource.emplace(pool); }
  PoolStack(const PoolStack&) = delete;
  PoolStack& operator=(const PoolStack&) = delete;
  ~PoolStack() {
    resource.reset();
    pool.give_back_all();
  }
  Resource<Pool>& top() { return *resource; }
  Resource<Pool>& tracked() { return *resource; }
  std::uint64_t tracked_address(const DeviceBlock& b) const { return b.ptr; }
  /// Before the backend's oracle looks: the pool's cached blocks go back
  /// (the oracle would call them leaks), each on the stream that freed it.
  void settle() { pool.give_back_all(); }
  Pool pool;
  std::optional<Resource<Pool>> resource;
};

template <class Lower>
using TopOf = std::remove_reference_t<decltype(std::declval<Lower&>().top())>;

/// What a decorator stack shares: the stack `Lower` it decorates, whose
/// tracking Resource (if any) the suites read.
template <class Lower>
struct DecoratorStack {
  using DeviceType = typename Lower::DeviceType;
  using BackendType = typename Lower::BackendType;
  static constexpr bool tracks = Lower::tracks;
  static constexpr bool writes_at_allocation = tracks && Lower::writes_at_allocation;
  explicit DecoratorStack(BackendType& backend) : lower(backend) {}
  auto& tracked() requires Lower::tracks { return lower.tracked(); }
  std::uint64_t tracked_address(const DeviceBlock& b) const requires Lower::tracks { return lower.tracked_address(b); }
  void settle() requires requires(Lower& l) { l.settle(); }
  { lower.settle(); }
  Lower lower;
};

/// BudgetResource over the stack `Lower`, with an ample budget.
template <class Lower>
struct BudgetStack : DecoratorStack<Lower> {
  explicit BudgetStack(typename Lower::BackendType& backend)
      : DecoratorStack<Lower>(backend), budget(this->lower.top(), kAmpleBudget) {}
  BudgetResource<TopOf<Lower>>& top() { return budget; }
  BudgetResource<TopOf<Lower>> budget;
};

/// LoggingResource over the stack `Lower`, writing to `log`.
template <class Lower>
struct LoggingStack : DecoratorStack<Lower> {
  explicit LoggingStack(typename Lower::BackendType& backend)
      : DecoratorStack<Lower>(backend), logging(this->lower.top(), log) {}
  LoggingResource<TopOf<Lower>>& top() { return logging; }
  std::ostringstream log;
  LoggingResource<TopOf<Lower>> logging;
};

/// The debug tier (model/debug_guard.h) over the stack `Lower`. `Memory`
/// makes the tier's GuardMemory for the device's backend:
/// `static std::unique_ptr<Memory::Type> make(BackendType&)`, throwing with
/// the reason when it cannot. Blocks are offset by the canary: the Resource
/// underneath (tracking stacks) keeps each at its address less the canary.
template <class Lower, class Memory>
struct GuardStack {
  using DeviceType = typename Lower::DeviceType;
  using BackendType = typename Lower::BackendType;
  using Tier = DebugGuardResource<TopOf<Lower>, typename Memory::Type>;
  static constexpr bool tracks = Lower::tracks;
  // G-canary: the canaries are filled as a tracked write of the block.
  static constexpr bool writes_at_allocation = Lower::tracks;
  explicit GuardStack(BackendType& backend) : lower(backend), memory(Memory::make(backend)) {
    tier.emplace(lower.top(), *memory);
  }
  GuardStack(const GuardStack&) = delete;
  GuardStack& operator=(const GuardStack&) = delete;
  Tier& top() { return *tier; }
  auto& tracked() requires Lower::tracks { return lower.tracked(); }
  std::uint64_t tracked_address(const DeviceBlock& b) const requires Lower::tracks {
    return b.ptr - tier->options().canary_bytes;
  }
  /// The quarantine goes back to the stack below (and so do its caches).
  void settle() {
    const Status released = tier->release_quarantine();
    EXPECT_TRUE(released.ok()) << released.error();
    if constexpr (requires { lower.settle(); }) lower.settle();
  }
  Lower lower;
  std::unique_ptr<typename Memory::Type> memory;
  std::optional<Tier> tier;
};

/// The stacks that track cross-stream uses: seed 000's and 001's cases.
template <Device D>
using TrackingStacks =
    ::testing::Types<TrackingStack<D>, BudgetStack<TrackingStack<D>>, LoggingStack<TrackingStack<D>>>;

/// Every resource and decorator: what the MemoryResource concept promises.
template <Device D>
using AllStacks =
    ::testing::Types<TrackingStack<D>, BudgetStack<TrackingStack<D>>, LoggingStack<TrackingStack<D>>,
                     NonTrackingStack<D>, BudgetStack<NonTrackingStack<D>>, LoggingStack<NonTrackingStack<D>>>;

/// The performance tier, alone and under each decorator (ResourceSuite,
/// RecorderSuite: the core Resource over the pool is what they read).
template <Device D>
using PoolStacks = ::testing::Types<PoolStack<D>, BudgetStack<PoolStack<D>>, LoggingStack<PoolStack<D>>>;

/// The debug tier over the tracking stacks, and decorators over it: what
/// LaunchRecorder needs (RecorderSuite: the recorder through the tier).
template <Device D, class Memory>
using GuardTrackingStacks =
    ::testing::Types<GuardStack<TrackingStack<D>, Memory>, GuardStack<PoolStack<D>, Memory>,
                     BudgetStack<GuardStack<TrackingStack<D>, Memory>>, LoggingStack<GuardStack<PoolStack<D>, Memory>>>;

/// The debug tier over the core, over the pool and over NonTrackingResource,
/// and the decorators over it: what the MemoryResource concept promises.
template <Device D, class Memory>
using GuardStacks =
    ::testing::Types<GuardStack<TrackingStack<D>, Memory>, GuardStack<PoolStack<D>, Memory>,
                     GuardStack<NonTrackingStack<D>, Memory>, BudgetStack<GuardStack<TrackingStack<D>, Memory>>,
                     LoggingStack<GuardStack<PoolStack<D>, Memory>>>;

/// The fixture of every suite: opens the device (or skips), registers
/// streams s0..s2 and builds the stack on it.
template <class S>
class ConformanceTest : public ::testing::Test {
 protected:
  using Stack = S;
  using DeviceType = typename Stack::DeviceType;
  using BackendType = typename Stack::BackendType;

  void SetUp() override {
    if (auto why = device.unavailable()) GTEST_SKIP() << *why;
    s0 = backend().add_stream("s0");
    s1 = backend().add_stream("s1");
    s2 = backend().add_stream("s2");
    stack.emplace(backend());
  }

  BackendType& backend() { return device.backend(); }
  typename BackendType::StreamRef ref(StreamId s) { return *backend().resolve_stream(s); }
  /// The resource under test.
  auto& r() { return stack->top(); }
  /// The Resource under the decorators (tracking stacks only).
  auto& tracked() { return stack->tracked(); }
  /// How many use events the Resource underneath keeps for `b` (nullopt:
  /// none live at its address).
  std::optional<std::size_t> use_events(const DeviceBlock& b) {
    return tracked().pending_use_event_count(stack->tracked_address(b));
  }
  /// What a block must hold after `reads` reading streams since its last
  /// write, `written` if the client wrote it: its last write (one the stack
  /// made at allocation too), then one event per reading stream (R1+R2).
  static std::optional<std::size_t> expected_use_events(std::size_t reads, bool written) {
    return (written || Stack::writes_at_allocation ? 1 : 0) + reads;
  }
  /// Allocates through the resource under test; fails the test if refused.
  DeviceBlock alloc(std::size_t bytes = 64, std::optional<StreamId> on = std::nullopt) {
    auto b = r().allocate(bytes, on.value_or(s0));
    EXPECT_TRUE(b.ok()) << b.error();
    return b.ok() ? b.value() : DeviceBlock{};
  }
  /// Lets all queued work run and checks that the backend's oracle (races,
  /// values read out of order) saw nothing: the work was ordered.
  void expect_no_problems_after_drain() {
    if constexpr (requires(Stack & st) { st.settle(); }) stack->settle();
    backend().drain();
    const auto problems = backend().new_problems();
    EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  }

  DeviceType device;
  StreamId s0{}, s1{}, s2{};
  std::optional<Stack> stack;
};

}  // namespace streamcheck::conformance
