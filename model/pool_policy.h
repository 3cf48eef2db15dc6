// The four switches of a stream-ordered memory pool (SPEC §3 R7), one type
// for both backends: the simulator decides which reuses it may explore from
// it, and the GPU backend sets its pool's attributes from it, so the two are
// always told the same thing.
#pragma once

#include <cstdint>
#include <string>

namespace streamcheck {

struct PoolPolicy {
  /// Reuse a range whose free is ordered before the allocation through
  /// events (CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES).
  bool follow_event_dependencies = true;
  /// Reuse a range whose free has already executed, adding no ordering
  /// (CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC).
  bool opportunistic = true;
  /// Reuse any freed range, the pool inserting a wait on the free
  /// (CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES).
  bool internal_dependencies = true;
  /// Freed bytes kept for reuse across a host synchronize; above this the
  /// completed frees are released (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD).
  std::uint64_t release_threshold = 0;
  /// Address space the simulated pool may hand out, in bytes.
  std::uint64_t capacity = std::uint64_t{1} << 30;

  bool operator==(const PoolPolicy&) const = default;

  /// Setting `k` (0..15) of the combinations of the four switches: bit 0
  /// follow event dependencies, bit 1 opportunistic, bit 2 internal
  /// dependencies, bit 3 a release threshold that keeps every freed range.
  static PoolPolicy from_bits(std::uint32_t k) {
    PoolPolicy p;
    p.follow_event_dependencies = (k & 1) != 0;
    p.opportunistic = (k & 2) != 0;
    p.internal_dependencies = (k & 4) != 0;
    p.release_threshold = (k & 8) != 0 ? p.capacity : 0;
    return p;
  }

  std::string describe() const {
    auto on = [](bool b) { return b ? "on" : "off"; };
    return std::string("follow-event-dependencies=") + on(follow_event_dependencies) +
           " opportunistic=" + on(opportunistic) + " internal-dependencies=" + on(internal_dependencies) +
           " release-threshold=" + std::to_string(release_threshold);
  }
};

}  // namespace streamcheck
