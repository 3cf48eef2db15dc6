// The debug tier's device work in the simulator (model/debug_guard.h's
// GuardMemory): a fill is a kernel writing the range, a check a kernel
// reading it. The simulator keeps no byte values, so a check's verdict
// comes from the race checker's shadow memory instead: a byte "changed"
// when the last write enqueued to it before the check is not one of this
// guard's fills of the checked pattern -- an out-of-bounds write into a
// canary, or a write into a quarantined block, by work enqueued before the
// check. Work racing with the check is the race checker's finding as well
// (a data race with the "guard check" op), as it would be on the GPU.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "backend_sim/sim_backend.h"
#include "model/debug_guard.h"

namespace streamcheck::sim {

class SimGuardMemory {
 public:
  struct Probe {
    GuardOutcome outcome;
    SimBackend::Event done;  // recorded after the check
  };

  explicit SimGuardMemory(SimBackend& backend) : backend_(backend) {}

  Status fill(StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern) {
    auto ref = backend_.resolve_stream(s);
    if (!ref) return unknown(s);
    fills_[backend_.launch(*ref, {KernelAccess{ptr, bytes, Access::Write, {}}}, "guard fill")] = pattern;
    return {};
  }

  Result<Probe> check(StreamId s, std::uint64_t ptr, std::uint64_t bytes, std::uint8_t pattern) {
    auto ref = backend_.resolve_stream(s);
    if (!ref) return unknown(s);
    GuardOutcome outcome;
    bool first = true;
    for (const auto& [range, writer] : backend_.model().last_writes(ByteRange{ptr, ptr + bytes})) {
      auto fill = writer ? fills_.find(*writer) : fills_.end();
      if (fill != fills_.end() && fill->second == pattern) continue;
      if (first) outcome.first_changed = range.lo - ptr;
      first = false;
      outcome.changed_bytes += range.size();
    }
    backend_.launch(*ref, {KernelAccess{ptr, bytes, Access::Read, {}}}, "guard check");
    auto done = backend_.create_event();
    if (!done) return done.error();
    if (auto recorded = backend_.record_event(done.value(), *ref); !recorded) return recorded.error();
    return Probe{outcome, std::move(done).value()};
  }

  /// The verdict once the check has run: asked of the event recorded after
  /// it, as the GPU's is (a query is an observation of the device, R4; with
  /// `wait` the host synchronizes on it).
  Result<std::optional<GuardOutcome>> outcome(Probe& probe, bool wait) {
    if (wait) {
      if (auto synced = backend_.synchronize_event(probe.done); !synced) return synced.error();
    } else {
      auto ran = backend_.query_event(probe.done);
      if (!ran) return ran.error();
      if (!ran.value()) return std::optional<GuardOutcome>{};
    }
    return std::optional<GuardOutcome>{probe.outcome};
  }

 private:
  static ResourceError unknown(StreamId s) {
    return ResourceError::stream_misuse("SimGuardMemory: unknown StreamId(" + std::to_string(s.value) + ")");
  }

  SimBackend& backend_;
  std::map<OpRef, std::uint8_t> fills_;  // every fill op and its pattern
};

static_assert(GuardMemory<SimGuardMemory>, "SimGuardMemory must satisfy streamcheck::GuardMemory");

}  // namespace streamcheck::sim
