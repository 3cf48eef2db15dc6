// Fault injection for any backend, written once (SPEC §9).
//
// A backend holds one FaultInjecting and puts each of its six Backend calls
// (create_event, record_event, wait_event, alloc_async, free_async,
// synchronize_stream) behind a fault point; each call begins with
//   if (auto fault = faults_.fault_at("create_event")) return *fault;
// and forwards arm_fault/disarm_fault to it. RMM keeps such test behaviour in
// adaptors (failure_callback_resource_adaptor) for the same reason: the
// arming, counting and exploring are written once, not once per backend.
// It is not a wrapper around the backend because the simulator must take its
// device-progress choice before the fault choice of the same call (the order
// every recorded schedule string replays).
//
// A fault point fires
//   - when armed: the nth fault point from now fires, once (counting only
//     the points of one call, e.g. "wait_event", when armed for that call);
//   - otherwise, while fewer than `max_explored_faults` have fired in this
//     run, when the `explore` decision says so (the simulator asks its
//     Chooser with ChoiceKind::Fault, so a fault is one choice of the
//     schedule and DFS explores it).
// A fired fault point returns ResourceError::injected_fault(call) without
// running the call: the backend's state is unchanged, and the error carries
// the typed marker `injected` that callers test (never the message text).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "model/types.h"

namespace streamcheck {

class FaultInjecting {
 public:
  /// Asked at a fault point that is not armed while explored faults remain:
  /// true makes this call fail.
  using ExploreFault = std::function<bool()>;

  FaultInjecting() = default;
  FaultInjecting(std::uint32_t max_explored_faults, ExploreFault explore)
      : max_explored_faults_(max_explored_faults), explore_(std::move(explore)) {}

  /// Makes the `nth` fault point from now (0 = the next one) fail, once;
  /// with `call` (a Backend call name), the nth point of that call only.
  void arm_fault(std::uint32_t nth, std::string_view call = {}) {
    armed_ = nth;
    armed_call_ = call;
  }
  void disarm_fault() { armed_.reset(); }
  bool fault_armed() const { return armed_.has_value(); }
  std::uint32_t faults_fired() const { return faults_fired_; }
  /// Fault points passed so far (every guarded backend call, fired or not).
  /// Counted by a relaxed load and store, not a locked add: a backend whose
  /// calls run on many host threads at once (CudaBackend, with no fault
  /// armed) may miss a count then but never races on it, and pays no
  /// locked instruction per call; tests that count calls make them from
  /// one thread.
  std::uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }

  /// One fault point, at the start of the backend call `call`: the error
  /// the call must return without doing anything, if this point fires.
  std::optional<ResourceError> fault_at(std::string_view call) {
    if (!fires(call)) return std::nullopt;
    return ResourceError::injected_fault(call);
  }

 private:
  bool fires(std::string_view call) {
    calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    bool fire = false;
    if (armed_ && !armed_call_.empty() && armed_call_ != call) {
      // armed for another call: this point neither counts down nor explores
    } else if (armed_) {
      if (*armed_ == 0) {
        fire = true;
        armed_.reset();
      } else {
        --*armed_;
      }
    } else if (explored_faults_ < max_explored_faults_ && explore_) {
      fire = explore_();
      if (fire) ++explored_faults_;
    }
    if (fire) ++faults_fired_;
    return fire;
  }

  std::uint32_t max_explored_faults_ = 0;
  ExploreFault explore_;
  std::optional<std::uint32_t> armed_;
  std::string armed_call_;  // empty: every call counts
  std::uint32_t faults_fired_ = 0;
  std::uint32_t explored_faults_ = 0;
  std::atomic<std::uint64_t> calls_{0};
};

}  // namespace streamcheck
