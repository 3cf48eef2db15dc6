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
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/backend.h"
#include "model/budget_resource.h"
#include "model/kernel_access.h"
#include "model/logging_resource.h"
#include "model/memory_resource.h"
#include "model/non_tracking_resource.h"
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
// underneath, whose counters the suites read.

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
  using BaseStack<D, Resource<typename D::BackendType>>::BaseStack;
  Resource<typename D::BackendType>& tracked() { return this->resource; }
};

template <Device D>
struct NonTrackingStack : BaseStack<D, NonTrackingResource<typename D::BackendType>> {
  static constexpr bool tracks = false;
  using BaseStack<D, NonTrackingResource<typename D::BackendType>>::BaseStack;
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
  explicit DecoratorStack(BackendType& backend) : lower(backend) {}
  auto& tracked() requires Lower::tracks { return lower.tracked(); }
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

/// The stacks that track cross-stream uses: seed 000's and 001's cases.
template <Device D>
using TrackingStacks =
    ::testing::Types<TrackingStack<D>, BudgetStack<TrackingStack<D>>, LoggingStack<TrackingStack<D>>>;

/// Every resource and decorator: what the MemoryResource concept promises.
template <Device D>
using AllStacks =
    ::testing::Types<TrackingStack<D>, BudgetStack<TrackingStack<D>>, LoggingStack<TrackingStack<D>>,
                     NonTrackingStack<D>, BudgetStack<NonTrackingStack<D>>, LoggingStack<NonTrackingStack<D>>>;

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
  /// Allocates through the resource under test; fails the test if refused.
  DeviceBlock alloc(std::size_t bytes = 64, std::optional<StreamId> on = std::nullopt) {
    auto b = r().allocate(bytes, on.value_or(s0));
    EXPECT_TRUE(b.ok()) << b.error();
    return b.ok() ? b.value() : DeviceBlock{};
  }
  /// Lets all queued work run and checks that the backend's oracle (races,
  /// values read out of order) saw nothing: the work was ordered.
  void expect_no_problems_after_drain() {
    backend().drain();
    const auto problems = backend().new_problems();
    EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  }

  DeviceType device;
  StreamId s0{}, s1{}, s2{};
  std::optional<Stack> stack;
};

}  // namespace streamcheck::conformance
