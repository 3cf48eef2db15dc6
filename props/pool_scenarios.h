// Small pool programs (SPEC §3 R7) written once over the backend, to compare
// the reuse outcomes the simulator allows with those a real pool produces
// under the same PoolPolicy.
//
// Each scenario allocates A on s0, frees it on s0, then allocates B of the
// same size, and reports whether B got A's address.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/backend.h"

namespace streamcheck::props {

enum class PoolScenario : std::uint8_t {
  OtherStreamNoDependency,  // B on s1, nothing orders the free before it
  OtherStreamGatedFree,     // as above, but s0 is held back so the free has not run
  OtherStreamEventWait,     // record e on s0 after the free; s1 waits on e; B on s1
  OtherStreamAfterSync,     // host synchronizes s0 after the free; B on s1
  SameStream,               // B on s0
};

inline constexpr std::array<PoolScenario, 5> kPoolScenarios{
    PoolScenario::OtherStreamNoDependency, PoolScenario::OtherStreamGatedFree, PoolScenario::OtherStreamEventWait,
    PoolScenario::OtherStreamAfterSync, PoolScenario::SameStream};

constexpr std::string_view to_string(PoolScenario s) {
  switch (s) {
    case PoolScenario::OtherStreamNoDependency:
      return "free s0; alloc s1 (no dependency)";
    case PoolScenario::OtherStreamGatedFree:
      return "gate s0; free s0; alloc s1 (free not yet run)";
    case PoolScenario::OtherStreamEventWait:
      return "free s0; record e; s1 waits e; alloc s1";
    case PoolScenario::OtherStreamAfterSync:
      return "free s0; sync s0; alloc s1";
    case PoolScenario::SameStream:
      return "free s0; alloc s0";
  }
  return "?";
}

/// Runs `scenario` on a backend with two streams; `gate(stream_ref)` holds a
/// stream back (a delay kernel on the GPU; nothing on the simulator, whose
/// schedules explore every completion order anyway). Returns true when B
/// reused A's address. Throws std::runtime_error on a backend failure.
template <Backend B, class Gate>
bool run_pool_scenario(B& b, StreamId s0, StreamId s1, PoolScenario scenario, Gate&& gate,
                       std::size_t bytes = 1 << 16) {
  auto must = [](auto r, const char* what) {
    if (!r.ok()) throw std::runtime_error(fmt::format("pool scenario: {}: {}", what, r.error().to_string()));
    return r;
  };
  const auto r0 = *b.resolve_stream(s0);
  const auto r1 = *b.resolve_stream(s1);
  const std::uint64_t a = must(b.alloc_async(bytes, r0), "alloc A").value();
  if (scenario == PoolScenario::OtherStreamGatedFree) gate(r0);
  (void)must(b.free_async(a, r0), "free A");
  auto target = r1;
  switch (scenario) {
    case PoolScenario::OtherStreamEventWait: {
      auto e = must(b.create_event(), "create event");
      (void)must(b.record_event(e.value(), r0), "record");
      (void)must(b.wait_event(r1, e.value()), "wait");
      break;
    }
    case PoolScenario::OtherStreamAfterSync:
      (void)(void)must(b.synchronize_stream(r0), "synchronize s0");
      break;
    case PoolScenario::SameStream:
      target = r0;
      break;
    default:
      break;
  }
  const std::uint64_t bptr = must(b.alloc_async(bytes, target), "alloc B").value();
  (void)must(b.free_async(bptr, target), "free B");
  (void)must(b.synchronize_stream(r0), "synchronize s0");
  (void)must(b.synchronize_stream(r1), "synchronize s1");
  return bptr == a;
}

}  // namespace streamcheck::props
